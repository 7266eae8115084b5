"""The child cache a pass plans from: it follows watch events, leaves out another
incarnation's objects and never takes an older version for a newer one; the watch that fills it
reports what vanished while it was not watching (on the in-memory apiserver); and the echoes
tell a pass when its own creations are not in the watch yet (then it LISTs). All in the fast
tier."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taas_operator.api.constants import MADE_BY_ANNOTATION
from taas_operator.api.resources import POD as KIND_POD
from taas_operator.controller.seen import ADOPTION, Seen
from taas_operator.controller.watch.children import (
    CHILD_SELECTOR,
    PODS,
    POLICIES,
    SERVICES,
    ChildCache,
)
from taas_operator.controller.watch.expectations import Expectations
from taas_operator.controller.watch.informer import Informer
from taas_operator.planner import made_by_token, replica_labels
from tests.harness.operator_run import PODS as PODS_PATH
from tests.harness.operator_run import new_namespace
from tests.operator.fake_operator import FakeCluster, fake_kube

pytestmark = pytest.mark.fast

NS, JOB, UID = "team", "job", "uid-1"
_POD_SPEC = {"containers": [{"name": "tensorflow", "image": "example.com/trainer:1"}]}


def _owner(uid: str, kind: str = "TFJob") -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": JOB, "uid": uid,
            "controller": True}  # fmt: skip


def _obj(name: str, rv: int, *, uid: str = "", owner: str | None = UID, **extra: Any) -> dict:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": uid or f"{name}-uid",
        "resourceVersion": str(rv),
        "labels": replica_labels(JOB, "Worker", int(name.rsplit("-", 1)[1])),
    }
    if owner:
        meta["ownerReferences"] = [_owner(owner)]
        # made by this operator process (its token), as the pods a pass creates
        meta["annotations"] = {MADE_BY_ANNOTATION: made_by_token(ADOPTION.key, NS, name, owner)}
    return {"metadata": meta, **extra}


def test_follows_adds_changes_and_deletions() -> None:
    cache = ChildCache()
    cache.put(PODS, _obj("job-worker-0", 10, status={"phase": "Pending"}))
    cache.put(SERVICES, _obj("job-worker-0", 11))
    cache.put(PODS, _obj("job-worker-0", 12, status={"phase": "Running"}))
    children = cache.of(NS, JOB, UID)
    assert [(p.name, p.phase) for p in children.pods] == [("job-worker-0", "Running")]
    assert children.services == ["job-worker-0"]
    cache.drop(PODS, _obj("job-worker-0", 13))
    children = cache.of(NS, JOB, UID)
    assert children.pods == [] and children.services == ["job-worker-0"]


def test_only_what_the_incarnation_controls_is_the_jobs() -> None:
    """Another incarnation's objects, orphans and objects another kind controls carry the
    job's labels but are not its children: a pass never plans to change or delete them."""
    cache = ChildCache()
    cache.put(PODS, _obj("job-worker-0", 10, owner="older-uid"))
    cache.put(PODS, _obj("job-worker-1", 11, owner=None))  # no controller: an orphan
    other = _obj("job-worker-2", 12)
    other["metadata"]["ownerReferences"] = [{**_owner(UID), "kind": "ReplicaSet"}]
    cache.put(PODS, other)
    cache.put(PODS, _obj("job-worker-3", 13))
    policy = _obj("job-worker-4", 14, spec={"podSelector": {}})
    policy["metadata"]["name"] = JOB
    cache.put(POLICIES, policy)
    children = cache.of(NS, JOB, UID)
    assert [p.name for p in children.pods] == ["job-worker-3"]
    assert children.policies == {JOB: {"podSelector": {}}}
    assert children.seen(KIND_POD, "job-worker-3") == Seen(
        KIND_POD, NS, "job-worker-3", "job-worker-3-uid", UID
    )
    for name in ("job-worker-0", "job-worker-1", "job-worker-2"):
        assert children.seen(KIND_POD, name) is None
    assert children.earlier(KIND_POD, "job-worker-0")
    assert not children.earlier(KIND_POD, "job-worker-1")
    assert not children.earlier(KIND_POD, "job-worker-2")
    assert [str(s) for s in cache.controlled(NS, JOB, UID)] == [
        "pod/job-worker-3",
        "networkpolicy/job",
    ]


def test_an_older_version_never_replaces_a_newer_one() -> None:
    cache = ChildCache()
    cache.put(PODS, _obj("job-worker-0", 12, status={"phase": "Running"}))
    cache.put(PODS, _obj("job-worker-0", 11, status={"phase": "Pending"}))
    assert [p.phase for p in cache.of(NS, JOB, UID).pods] == ["Running"]
    cache.put(PODS, _obj("job-worker-0", 3, uid="new-incarnation"))  # another uid: replaced
    assert [p.uid for p in cache.of(NS, JOB, UID).pods] == ["new-incarnation"]


def test_pending_echoes_of_children_make_a_pass_list() -> None:
    expectations = Expectations()
    job = (NS, JOB)
    expectations.expect(job, ("tfjobs", JOB), "MODIFIED")
    assert expectations.pending(job, (PODS, SERVICES)) is False  # the status write does not count
    expectations.expect(job, (PODS, "job-worker-0"))
    assert expectations.pending(job, (PODS, SERVICES)) is True  # in flight
    expectations.created(job, (PODS, "job-worker-0"), "7")
    assert expectations.pending(job, (PODS, SERVICES)) is True  # made, its event not seen yet
    expectations.seen(job, (PODS, "job-worker-0"), "ADDED", "7")
    assert expectations.pending(job, (PODS, SERVICES)) is False


@pytest.mark.timeout(120)
def test_a_watch_that_lists_again_reports_what_vanished(fake_cluster: FakeCluster) -> None:
    """The informer LISTs in pages, then watches; when it must LIST again (its watch lost its
    place), an object deleted meanwhile, which no watch event reported, is handed over as
    DELETED: the child cache never keeps a ghost."""
    admin = fake_cluster.admin
    ns = new_namespace(admin, "inform")
    for i in range(5):
        meta = {
            "name": f"job-worker-{i}",
            "labels": replica_labels(JOB, "Worker", i),
            "ownerReferences": [_owner(UID)],
            "annotations": {
                MADE_BY_ANNOTATION: made_by_token(ADOPTION.key, ns, f"job-worker-{i}", UID)
            },
        }
        admin.create(PODS_PATH.format(ns=ns), {"metadata": meta, "spec": _POD_SPEC})
    seen: list[tuple[str | None, str]] = []

    async def scenario() -> list[str]:
        kube = fake_kube(fake_cluster.store, 16)
        cache = ChildCache()

        def handle(event_type: str | None, body: Any) -> None:
            seen.append((event_type, body["metadata"]["name"]))
            (cache.drop if event_type == "DELETED" else cache.put)(PODS, body)

        informer = Informer(kube, KIND_POD, ns, CHILD_SELECTOR, handle)
        await informer._list()
        admin.delete(f"{PODS_PATH.format(ns=ns)}/job-worker-3")  # no watch saw it
        await informer._list()  # as after 410 Gone
        await kube.close()
        return sorted(p.name for p in cache.of(ns, JOB, UID).pods)

    left = asyncio.run(scenario())
    assert left == [f"job-worker-{i}" for i in (0, 1, 2, 4)]
    assert ("DELETED", "job-worker-3") in seen
    assert [t for t, _ in seen].count(None) == 9  # 5 listed, then 4


def _gc_marked(name: str, rv: int, uid: str = "") -> dict:
    """A pod the pod garbage collector marked before deleting it (its node was deleted)."""
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC"}
    status = {"phase": "Failed", "conditions": [condition]}
    return _obj(name, rv, uid=uid, spec={"nodeName": "node-4"}, status=status)


def test_a_pod_lost_with_its_node_is_remembered_after_its_deletion() -> None:
    cache = ChildCache()
    cache.put(PODS, _obj("job-worker-0", 10, status={"phase": "Running"}))
    cache.put(PODS, _obj("job-worker-1", 11, status={"phase": "Running"}))
    cache.put(PODS, _gc_marked("job-worker-1", 12))
    cache.drop(PODS, _gc_marked("job-worker-1", 13))
    cache.drop(PODS, _obj("job-worker-0", 14, status={"phase": "Running"}))  # by hand: gone
    (lost,) = cache.of(NS, JOB, UID).pods
    assert (lost.name, lost.gone, lost.node) == ("job-worker-1", True, "node-4")
    assert cache.lost(NS, JOB, UID) == [lost]
    # the replacement takes the name: the remembered pod is forgotten
    cache.put(PODS, _obj("job-worker-1", 20, uid="new", status={"phase": "Pending"}))
    assert [(p.uid, p.gone) for p in cache.of(NS, JOB, UID).pods] == [("new", False)]
    # or the job goes
    cache.put(PODS, _gc_marked("job-worker-1", 21, uid="new"))
    cache.drop(PODS, _gc_marked("job-worker-1", 22, uid="new"))
    assert len(cache.lost(NS, JOB, UID)) == 1
    cache.forget_job(NS, JOB)
    assert cache.of(NS, JOB, UID).pods == [] and len(cache) == 0
