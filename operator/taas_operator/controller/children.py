"""What exists of every job's pods, services and NetworkPolicies, as the watches show it.

    cache = ChildCache()
    cache.seed(plural, items)             # from the operator's own LIST at start-up
    cache.trust()                         # the seed is complete: passes may read it
    cache.put(plural, body) -> bool       # listed/added/modified by a watch; True: a re-delivery
    cache.drop(plural, body)              # a DELETED child
    cache.of(namespace, job, uid) -> Children | None     # None: do not trust it now, LIST
    cache.suspect(plural, namespace)      # that kind was listed again there: distrust it
    cache.audit(plural, namespace, names, list_rv) -> set[str]  # a fresh LIST; jobs it fixed
    cache.places() -> set[(plural, namespace)]            # what is cached, for audits
    Children(pods, services, policies)    # what a pass plans from
    children_from(pods, services, policies, uid) -> Children    # the same from LISTed objects

A pass reads a job's children here instead of LISTing them (three requests per pass, each one
a scan of the namespace in the apiserver: a restart among 5,000 jobs made 15,000 of them).
Why it can be trusted:
- complete before the first pass: the operator LISTs every child (paginated) in a kopf startup
  handler, which runs before kopf starts any watch, so before any pass is asked for; until that
  succeeds (say the apiserver is down) nothing is trusted and passes LIST;
- current afterwards: every watch event goes through here, deletions included; a job's own
  creations are in it once their watch events arrived, and a pass that starts while some have
  not (`Echoes.pending`) LISTs instead;
- watch gaps: an object deleted between that LIST and the start of kopf's watch, or while a
  watch was lost (kopf lists again after 410 Gone or a peering pause, and a re-list carries no
  DELETED events), would stay here. A re-list shows unchanged objects a second time with the
  same resourceVersion, which never happens otherwise (the seed's own first re-delivery
  aside); then that kind in that namespace is distrusted (passes LIST) until one fresh LIST
  of it (`audit`) has dropped every object it lacks that is older than the LIST. The same
  audit runs on every kind and namespace cached `AUDIT_FIRST_S` after the start and every
  `AUDIT_PERIOD_S` (the Controller's timers), for a gap no re-delivery showed.
Entries are small (a pod: the engine's ObservedPod; a service: its name; a policy: its spec) and
carry the controlling owner's uid, so objects of another incarnation of the job are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taas_operator.api.constants import CONTROLLER_NAME, LABEL_JOB_NAME, LABEL_OPERATOR_NAME
from taas_operator.engine import ObservedPod

PODS, SERVICES, POLICIES = "pods", "services", "networkpolicies"
#: Every child of every job, as a label selector (the child watches' and the audits').
CHILD_SELECTOR = f"{LABEL_OPERATOR_NAME}={CONTROLLER_NAME},{LABEL_JOB_NAME}"


@dataclass
class Children:
    """A job's children as a pass plans from them."""

    pods: list[ObservedPod] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> spec


@dataclass(slots=True)
class _Entry:
    job: str
    uid: str
    owner: str | None  # the controlling owner's uid
    rv: int
    value: Any  # ObservedPod | None (services) | spec (policies)
    seeded: bool = False  # from the start-up LIST, not yet seen in a watch


def _rv(meta: Mapping[str, Any]) -> int:
    try:
        return int(meta.get("resourceVersion") or 0)
    except ValueError:  # opaque by contract; etcd-backed servers use integers
        return 0


def _controller_uid(meta: Mapping[str, Any]) -> str | None:
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    return str(refs[0].get("uid")) if refs else None


def _value(plural: str, body: Mapping[str, Any]) -> Any:
    if plural == PODS:
        return ObservedPod.from_manifest(body)
    if plural == POLICIES:
        return body.get("spec") or {}
    return None


def _owned(owner: str | None, uid: str) -> bool:
    """Ours unless its controller owner is another object (e.g. an older job of the name)."""
    return owner is None or owner == uid


def children_from(
    pods: Iterable[Mapping[str, Any]],
    services: Iterable[Mapping[str, Any]],
    policies: Iterable[Mapping[str, Any]],
    uid: str,
) -> Children:
    """Children from objects read fresh (a LIST), leaving out another incarnation's."""

    def mine(objs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [o for o in objs if _owned(_controller_uid(o.get("metadata") or {}), uid)]

    observed = [p for p in map(ObservedPod.from_manifest, mine(pods)) if p is not None]
    return Children(
        pods=observed,
        services=[str(s["metadata"]["name"]) for s in mine(services)],
        policies={str(p["metadata"]["name"]): p.get("spec") or {} for p in mine(policies)},
    )


class ChildCache:
    """Children of every job by (plural, namespace, name), and by job."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], _Entry] = {}
        self._by_job: dict[tuple[str, str], set[tuple[str, str]]] = {}  # (ns, job) -> refs
        self._suspect: set[tuple[str, str]] = set()  # (plural, ns) listed again, not audited
        self._trusted = False

    def __len__(self) -> int:
        return len(self._objects)

    def seed(self, plural: str, items: Iterable[Mapping[str, Any]]) -> None:
        """Objects from the start-up LIST (kopf's first watch events show them again)."""
        for body in items:
            self._put(plural, body, seeded=True)

    def trust(self) -> None:
        """The start-up LIST is complete."""
        self._trusted = True

    def put(self, plural: str, body: Mapping[str, Any]) -> bool:
        """Keep a child as a watch lists, adds or modifies it; True when it came again
        unchanged (same uid and resourceVersion), which only a re-list does."""
        return self._put(plural, body, seeded=False)

    def _put(self, plural: str, body: Mapping[str, Any], seeded: bool) -> bool:
        meta = body.get("metadata") or {}
        job = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
        if not job:
            return False
        ns, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), meta.get("uid")
        rv = _rv(meta)
        key = (plural, ns, name)
        old = self._objects.get(key)
        if old is not None and old.uid == uid and rv <= old.rv:
            again = rv == old.rv and not old.seeded and not seeded
            old.seeded = old.seeded and seeded
            return again  # the same version again (or an older one): nothing to keep
        if old is not None and old.job != job:  # relabelled to another job
            self._unlink(key, old)
        value = _value(plural, body)
        self._objects[key] = _Entry(job, str(uid), _controller_uid(meta), rv, value, seeded)
        self._by_job.setdefault((ns, job), set()).add((plural, name))
        return False

    def drop(self, plural: str, body: Mapping[str, Any]) -> None:
        """A child was deleted."""
        meta = body.get("metadata") or {}
        key = (plural, str(meta.get("namespace", "")), str(meta.get("name", "")))
        old = self._objects.get(key)
        if old is not None and old.uid == meta.get("uid"):
            del self._objects[key]
            self._unlink(key, old)

    def _unlink(self, key: tuple[str, str, str], entry: _Entry) -> None:
        plural, ns, name = key
        refs = self._by_job.get((ns, entry.job))
        if refs is not None:
            refs.discard((plural, name))
            if not refs:
                del self._by_job[(ns, entry.job)]

    def of(self, namespace: str, job: str, uid: str) -> Children | None:
        """The job's children (those of incarnation `uid`), or None before the start-up LIST
        and while a re-list of some kind in the namespace is not audited yet."""
        if not self._trusted or any(ns == namespace for _, ns in self._suspect):
            return None
        found = Children()
        for plural, name in self._by_job.get((namespace, job), ()):
            entry = self._objects[(plural, namespace, name)]
            if not _owned(entry.owner, uid):
                continue
            if plural == PODS and entry.value is not None:
                found.pods.append(entry.value)
            elif plural == SERVICES:
                found.services.append(name)
            elif plural == POLICIES:
                found.policies[name] = entry.value
        return found

    def suspect(self, plural: str, namespace: str) -> None:
        """A re-list of `plural` in `namespace` is under way: objects deleted in the watch gap
        may still be here."""
        self._suspect.add((plural, namespace))

    def is_suspect(self, plural: str, namespace: str) -> bool:
        return (plural, namespace) in self._suspect

    def audit(self, plural: str, namespace: str, names: set[str], list_rv: int) -> set[str]:
        """A fresh LIST of `plural` in `namespace` at `list_rv` found `names`: drop what it
        lacks that is not newer than the LIST (deleted in a watch gap) and trust the kind there
        again; return the jobs whose children changed. What the LIST has is not put here: the
        watch delivers it anyway, and putting it could bring back an object whose DELETED event
        came after the LIST was answered."""
        fixed: set[str] = set()
        for key, entry in list(self._objects.items()):
            kind, ns, name = key
            if kind == plural and ns == namespace and name not in names and entry.rv <= list_rv:
                del self._objects[key]
                self._unlink(key, entry)
                fixed.add(entry.job)
        self._suspect.discard((plural, namespace))
        return fixed

    def places(self) -> set[tuple[str, str]]:
        """(plural, namespace) of every child cached: what a periodic audit checks."""
        return {(plural, ns) for plural, ns, _ in self._objects}
