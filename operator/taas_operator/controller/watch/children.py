"""What exists of every job's pods, services and NetworkPolicies, as the watches show it.

    cache = ChildCache()
    cache.put(plural, body)               # a child listed, added or modified
    cache.drop(plural, body)              # a child deleted
    cache.of(namespace, job, uid) -> Children
    cache.lost(namespace, job, uid) -> list[ObservedPod]    # pods gone with their node
    cache.controlled(namespace, job, uid) -> [Seen]   # what `uid` controls
    cache.forget_job(namespace, job)      # the job is gone: drop what it alone kept
    Children(pods, services, policies)    # what a pass plans from
    children.seen(kind, name) -> Seen | None          # one of them as read (`reconcile.owned`)
    children.earlier(kind, name) -> bool              # held by an earlier incarnation's
    cache.find(kind, namespace, name) -> Seen | None  # any child as read
    children_from(pods, services, policies, uid, namespace) -> Children  # the same, LISTed

A pass reads a job's children here instead of LISTing them (three requests per pass, each one
a scan of the namespace in the apiserver: a restart among 5,000 jobs made 15,000 of them).
Why it can be trusted: the watches (`informer`) fill it before any pass may run (the work queue
waits until every watch has listed once), every later event goes through here, deletions
included, and a watch that had to LIST again reports what vanished meanwhile as deleted. A
job's own creations are in it once their watch events arrived; a pass that starts while some
have not (`Expectations.pending`) LISTs instead.
Entries are small (a pod: the planner's ObservedPod; a service: its name; a policy: its spec) and
carry the object's uid and its controlling TFJob's uid (`seen.controller_uid`): a job's children
are the objects that incarnation of the job controls. Another incarnation's, an orphan's and
one made by hand with the job's labels are left out: a pass never plans to change or delete
them, and a creation that meets one under its name is told whose it is (`reconcile.owned`).
A pod deleted because it was lost with its node (`ObservedPod.lost_with_node`: evicted from an
unreachable node, or its node deleted) is kept after its DELETED event, marked `gone`, until a
pod takes its name again or the job is gone: the pass that runs after the pod garbage
collector removed it must still know the replica was lost with its node, and which node (to
fail a restartPolicy Never job naming it, instead of making the replica again). An operator
that was not running when the pod went cannot know that: it makes the replica again, as for a
pod deleted by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taas_operator.api.constants import CONTROLLER_NAME, LABEL_JOB_NAME, LABEL_OPERATOR_NAME
from taas_operator.api.resources import Kind
from taas_operator.apiserver.verbs import CHILD_KINDS
from taas_operator.controller.seen import Seen, controller_uid
from taas_operator.planner import ObservedPod

PODS, SERVICES, POLICIES = "pods", "services", "networkpolicies"
#: Every child of every job, as a label selector (the child watches' and the audits').
CHILD_SELECTOR = f"{LABEL_OPERATOR_NAME}={CONTROLLER_NAME},{LABEL_JOB_NAME}"


@dataclass(slots=True)
class _Entry:
    job: str
    uid: str
    owner: str | None  # `seen.controller_uid`
    rv: int
    value: Any  # ObservedPod | None (services) | spec (policies)


@dataclass
class Children:
    """A job's children as a pass plans from them."""

    pods: list[ObservedPod] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> spec
    namespace: str = ""
    #: (plural, name) -> what was read of each (the cache's own entries: no copy per pass)
    read: Mapping[tuple[str, str], _Entry] = field(default_factory=dict)
    uid: str = ""  # the job's

    def seen(self, kind: Kind, name: str) -> Seen | None:
        """The child `name` of `kind` as read, if it is one of the job's."""
        entry = self.read.get((kind.plural, name))
        if entry is None or not _owned(entry.owner, self.uid):
            return None
        return Seen(kind, self.namespace, name, entry.uid, entry.owner)

    def earlier(self, kind: Kind, name: str) -> bool:
        """Whether the watch shows `name` held by another TFJob's object of the job's name
        (an earlier incarnation's, on its way out)."""
        entry = self.read.get((kind.plural, name))
        return entry is not None and entry.owner not in (None, "", self.uid)


def _rv(meta: Mapping[str, Any]) -> int:
    try:
        return int(meta.get("resourceVersion") or 0)
    except ValueError:  # opaque by contract; etcd-backed servers use integers
        return 0


def _value(plural: str, body: Mapping[str, Any]) -> Any:
    if plural == PODS:
        return ObservedPod.from_manifest(body)
    if plural == POLICIES:
        return body.get("spec") or {}
    return None


def _owned(owner: str | None, uid: str) -> bool:
    """The job's: the TFJob `uid` controls it (not an orphan, not another incarnation's)."""
    return bool(uid) and owner == uid


def children_from(
    pods: Iterable[Mapping[str, Any]],
    services: Iterable[Mapping[str, Any]],
    policies: Iterable[Mapping[str, Any]],
    uid: str,
    namespace: str = "",
) -> Children:
    """Children from objects read fresh (a LIST), leaving out those `uid` does not control."""
    read: dict[tuple[str, str], _Entry] = {}

    def mine(plural: str, objs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        found = []
        for obj in objs:
            meta = obj.get("metadata") or {}
            owner = controller_uid(meta, pod=plural == PODS)
            if _owned(owner, uid):
                entry = _Entry("", str(meta.get("uid") or ""), owner, _rv(meta), None)
                read[(plural, str(meta.get("name") or ""))] = entry
                found.append(obj)
        return found

    observed = [p for p in map(ObservedPod.from_manifest, mine(PODS, pods)) if p is not None]
    return Children(
        pods=observed,
        services=[str(s["metadata"]["name"]) for s in mine(SERVICES, services)],
        policies={
            str(p["metadata"]["name"]): p.get("spec") or {} for p in mine(POLICIES, policies)
        },
        namespace=namespace,
        read=read,
        uid=uid,
    )


class ChildCache:
    """Children of every job by (plural, namespace, name), and by job."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], _Entry] = {}
        # (ns, job) -> (plural, name) -> the same entries: a pass reads its job's children
        # without a lookup per child (a job of 1,100 replicas has 2,200)
        self._by_job: dict[tuple[str, str], dict[tuple[str, str], _Entry]] = {}

    def __len__(self) -> int:
        return len(self._objects)

    def put(self, plural: str, body: Mapping[str, Any]) -> None:
        """Keep a child as a watch lists, adds or modifies it (an older version is ignored)."""
        meta = body.get("metadata") or {}
        job = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
        if not job:
            return
        ns, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), meta.get("uid")
        rv = _rv(meta)
        key = (plural, ns, name)
        old = self._objects.get(key)
        if old is not None and old.uid == uid and rv < old.rv:
            return
        if old is not None and old.job != job:  # relabelled to another job
            self._unlink(key, old)
        owner = controller_uid(meta, pod=plural == PODS)
        entry = _Entry(job, str(uid), owner, rv, _value(plural, body))
        self._objects[key] = entry
        self._by_job.setdefault((ns, job), {})[(plural, name)] = entry

    def drop(self, plural: str, body: Mapping[str, Any]) -> None:
        """A child was deleted (a pod lost with its node is kept, marked gone)."""
        meta = body.get("metadata") or {}
        key = (plural, str(meta.get("namespace", "")), str(meta.get("name", "")))
        old = self._objects.get(key)
        if old is None or old.uid != meta.get("uid"):
            return
        last = _value(plural, body) if plural == PODS else None
        if isinstance(last, ObservedPod) and last.lost_with_node:
            old.value = last.model_copy(update={"gone": True, "deleting": True})
            return
        del self._objects[key]
        self._unlink(key, old)

    def _unlink(self, key: tuple[str, str, str], entry: _Entry) -> None:
        plural, ns, name = key
        refs = self._by_job.get((ns, entry.job))
        if refs is not None:
            refs.pop((plural, name), None)
            if not refs:
                del self._by_job[(ns, entry.job)]

    def others(self, namespace: str, job: str, uid: str) -> list[ObservedPod]:
        """Pods labelled with the job's name that another object controls and that still exist:
        an earlier incarnation's (or, with `uid` "", those of a job that is gone)."""
        return [
            entry.value
            for (plural, _), entry in self._by_job.get((namespace, job), {}).items()
            if plural == PODS
            and entry.value is not None
            and not entry.value.gone
            and entry.owner not in (None, "", uid)
        ]

    def controlled(self, namespace: str, job: str, uid: str) -> list[Seen]:
        """The children that exist and that the job's incarnation `uid` controls (not those
        without a controller: orphaned ones are no longer the job's), as read."""
        return [
            Seen(CHILD_KINDS[plural], namespace, name, entry.uid, entry.owner)
            for (plural, name), entry in self._by_job.get((namespace, job), {}).items()
            if _owned(entry.owner, uid)
            and not (isinstance(entry.value, ObservedPod) and entry.value.gone)
        ]

    def find(self, kind: Kind, namespace: str, name: str) -> Seen | None:
        """A child of any job or incarnation, as read."""
        entry = self._objects.get((kind.plural, namespace, name))
        return None if entry is None else Seen(kind, namespace, name, entry.uid, entry.owner)

    def lost(self, namespace: str, job: str, uid: str) -> list[ObservedPod]:
        """The job's pods that are gone but remembered as lost with their node."""
        return [p for p in self.of(namespace, job, uid).pods if p.gone]

    def forget_job(self, namespace: str, job: str) -> None:
        """The job is gone: drop the pods remembered as lost with their node (its other
        children have their own DELETED events)."""
        for (plural, name), entry in list(self._by_job.get((namespace, job), {}).items()):
            if isinstance(entry.value, ObservedPod) and entry.value.gone:
                key = (plural, namespace, name)
                del self._objects[key]
                self._unlink(key, entry)

    def of(self, namespace: str, job: str, uid: str) -> Children:
        """The job's children (those of incarnation `uid`)."""
        entries = self._by_job.get((namespace, job), {})
        found = Children(namespace=namespace, read=entries, uid=uid)
        for (plural, name), entry in entries.items():
            if not _owned(entry.owner, uid):
                continue
            if plural == PODS and entry.value is not None:
                found.pods.append(entry.value)
            elif plural == SERVICES:
                found.services.append(name)
            elif plural == POLICIES:
                found.policies[name] = entry.value
        return found
