"""An object as the operator read it: what is checked before a write, and what the write is
made conditional on.

    Seen.read(kind, body) -> Seen       # namespace, name, uid, the controlling TFJob's uid
    str(seen)                           # as kubectl names it: networkpolicy/default-deny
    controller_uid(metadata) -> str | None

A child of a job is an object whose controller ownerReference is that TFJob (`controller_uid`);
`reconcile.owned` writes only such objects, each write conditional on `Seen.uid`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taas_operator.api.constants import GROUP, KIND
from taas_operator.api.resources import Kind


def controller_uid(meta: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller when that is a TFJob; "" when it is controlled by
    something else; None when nothing controls it (made by hand, or orphaned)."""
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    if not refs:
        return None
    ref = refs[0]
    group = str(ref.get("apiVersion") or "").partition("/")[0]
    return str(ref.get("uid") or "") if group == GROUP and ref.get("kind") == KIND else ""


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
            controller_uid(meta),
        )

    def __str__(self) -> str:
        """As kubectl names it: networkpolicy/default-deny."""
        plural = self.kind.plural
        return f"{_SINGULAR.get(plural, plural)}/{self.name}"


_SINGULAR = {"networkpolicies": "networkpolicy", "pods": "pod", "services": "service",
             "podgroups": "podgroup", "deployments": "deployment"}  # fmt: skip
