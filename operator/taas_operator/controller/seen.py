"""An object as the operator read it: what is checked before a write, and what the write is
made conditional on.

    Seen.read(kind, body) -> Seen       # namespace, name, uid, the controlling TFJob's uid
    str(seen)                           # as kubectl names it: networkpolicy/default-deny
    controller_uid(metadata, pod=False) -> str | None
    ADOPTION.key                        # the key of this process's pods' taas.dev/made-by
    ADOPTION.activate()                 # the first pass: pods made before are trusted

A child of a job is an object whose controller ownerReference is that TFJob (`controller_uid`);
`reconcile.owned` writes only such objects, each write conditional on `Seen.uid`. A pod is
the job's only if the operator made it: anyone who may create pods in the namespace can give
one the job's ownerReference (and, once a replica's pod is gone, its name), so a pod counts as
controlled by the TFJob only when it carries `taas.dev/made-by`, the HMAC of its namespace,
name and job uid under a key this process drew at random and never shows
(`planner.made_by_token`), or was created before this process began its passes (pods of an
earlier operator process or of the replica it took over from, which no key here can vouch
for: created before that second, or seen by this process before its first pass). Any other
pod with the job's ownerReference is nobody's child: the job fails naming it
(`ObjectNotOwned`), the pod is never counted, adopted or touched.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from taas_operator.api.constants import GROUP, KIND, MADE_BY_ANNOTATION
from taas_operator.api.models import format_time
from taas_operator.api.resources import POD, Kind
from taas_operator.planner import made_by_token


class Adoption:
    """This process's adoption key, and since when it runs passes (see the module)."""

    def __init__(self) -> None:
        self.key = os.urandom(32)
        self.since: str | None = None  # RFC 3339, as creationTimestamp: the first pass
        #: uids of the pods seen before the first pass (at most the pods then in the cluster)
        self.before: set[str] = set()

    def activate(self) -> None:
        """Passes begin: pods created from now on must carry this process's token."""
        if self.since is None:
            self.since = format_time(datetime.now(UTC))

    def made_by_us(self, meta: Mapping[str, Any], job_uid: str) -> bool:
        """Whether the pod was made by this process (its token), or before its passes began."""
        token = (meta.get("annotations") or {}).get(MADE_BY_ANNOTATION)
        if isinstance(token, str):
            ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            if hmac.compare_digest(token, made_by_token(self.key, ns, name, job_uid)):
                return True
        uid = str(meta.get("uid") or "")
        if self.since is None:  # passes have not begun: whoever made it, it is the job's
            if uid:
                self.before.add(uid)
            return True
        created = meta.get("creationTimestamp")
        # creationTimestamp has whole seconds: a pod of the second the passes began counts as
        # made before them only if this process saw it then (`before`), so a pod of an earlier
        # operator or of Kubeflow stays the job's when the kubelet next writes its status
        if uid and uid in self.before:
            return True
        return isinstance(created, str) and created < self.since


ADOPTION = Adoption()


def controller_uid(meta: Mapping[str, Any], pod: bool = False) -> str | None:
    """The uid of the object's controller when that is a TFJob; "" when it is controlled by
    something else, or is a `pod` the operator did not make (`ADOPTION`); None when nothing
    controls it (made by hand, or orphaned)."""
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    if not refs:
        return None
    ref = refs[0]
    group = str(ref.get("apiVersion") or "").partition("/")[0]
    if group != GROUP or ref.get("kind") != KIND:
        return ""
    uid = str(ref.get("uid") or "")
    return uid if not pod or not uid or ADOPTION.made_by_us(meta, uid) else ""


@dataclass(frozen=True, slots=True)
class Seen:
    """An object as the operator read it (a watch, a LIST, a GET): what `reconcile.owned`
    checks before a write, and the uid the write is made conditional on."""

    kind: Kind
    namespace: str
    name: str
    uid: str
    owner: str | None  # `controller_uid`

    @classmethod
    def read(cls, kind: Kind, body: Mapping[str, Any]) -> Seen:
        """What an object's metadata says."""
        meta = body.get("metadata") or {}
        return cls(
            kind,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
            controller_uid(meta, pod=kind.plural == POD.plural),
        )

    def __str__(self) -> str:
        """As kubectl names it: networkpolicy/default-deny."""
        plural = self.kind.plural
        return f"{_SINGULAR.get(plural, plural)}/{self.name}"


_SINGULAR = {"networkpolicies": "networkpolicy", "pods": "pod", "services": "service",
             "podgroups": "podgroup", "deployments": "deployment"}  # fmt: skip
