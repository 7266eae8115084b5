"""The child cache a pass plans from (pure, no apiserver): untrusted until the start-up LIST
is in, it follows watch events, leaves out another incarnation's objects, notices a re-list (an
object shown again unchanged, not counting the watch's first sight of what the start-up LIST
had) and then is not trusted until an audit LIST has dropped what was deleted in the watch gap;
and the echoes tell a pass when its own creations are not in the watch yet (then it LISTs)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from operator_harness import PODS as PODS_PATH
from operator_harness import Api, new_namespace

from taas_controlplane.launcher import ControlPlane
from taas_operator.controller.children import PODS, POLICIES, SERVICES, ChildCache
from taas_operator.controller.childsync import ChildSync
from taas_operator.controller.echoes import Echoes
from taas_operator.controller.kube import KubeClient
from taas_operator.engine import replica_labels

NS, JOB, UID = "team", "job", "uid-1"
_POD_SPEC = {"containers": [{"name": "tensorflow", "image": "example.com/trainer:1"}]}


def _obj(name: str, rv: int, *, uid: str = "", owner: str | None = UID, **extra: Any) -> dict:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": uid or f"{name}-uid",
        "resourceVersion": str(rv),
        "labels": replica_labels(JOB, "Worker", int(name.rsplit("-", 1)[1])),
    }
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "TFJob"}]
    return {"metadata": meta, **extra}


def _trusted() -> ChildCache:
    cache = ChildCache()
    cache.trust()
    return cache


def test_untrusted_until_the_start_up_list_and_its_echo_is_no_relist() -> None:
    cache = ChildCache()
    cache.seed(PODS, [_obj("job-worker-0", 10), _obj("job-worker-1", 11)])
    assert cache.of(NS, JOB, UID) is None  # passes LIST until the seed is complete
    cache.trust()
    children = cache.of(NS, JOB, UID)
    assert children is not None and len(children.pods) == 2
    assert cache.put(PODS, _obj("job-worker-0", 10)) is False  # the watch's first sight
    assert cache.put(PODS, _obj("job-worker-1", 9)) is False  # older: ignored
    assert cache.put(PODS, _obj("job-worker-0", 10)) is True  # again: a re-list


def test_follows_adds_changes_and_deletions() -> None:
    cache = _trusted()
    assert cache.put(PODS, _obj("job-worker-0", 10, status={"phase": "Pending"})) is False
    assert cache.put(SERVICES, _obj("job-worker-0", 11)) is False
    assert cache.put(PODS, _obj("job-worker-0", 12, status={"phase": "Running"})) is False
    children = cache.of(NS, JOB, UID)
    assert children is not None
    assert [(p.name, p.phase) for p in children.pods] == [("job-worker-0", "Running")]
    assert children.services == ["job-worker-0"]
    cache.drop(PODS, _obj("job-worker-0", 13))
    children = cache.of(NS, JOB, UID)
    assert children is not None and children.pods == [] and children.services == ["job-worker-0"]


def test_another_incarnations_objects_are_left_out() -> None:
    cache = _trusted()
    cache.put(PODS, _obj("job-worker-0", 10, owner="older-uid"))
    cache.put(PODS, _obj("job-worker-1", 11, owner=None))  # no controller: ours to adopt
    policy = _obj("job-worker-2", 12, spec={"podSelector": {}})
    policy["metadata"]["name"] = JOB
    cache.put(POLICIES, policy)
    children = cache.of(NS, JOB, UID)
    assert children is not None
    assert [p.name for p in children.pods] == ["job-worker-1"]
    assert children.policies == {JOB: {"podSelector": {}}}


def test_a_relist_is_noticed_and_audited() -> None:
    """kopf lists again after a lost watch: an unchanged object comes again (same uid and
    resourceVersion); the cache is distrusted until a LIST drops what the gap deleted."""
    cache = _trusted()
    for i, rv in enumerate((10, 11, 12)):
        cache.put(PODS, _obj(f"job-worker-{i}", rv))
    assert cache.put(PODS, _obj("job-worker-0", 10)) is True  # the re-list
    cache.suspect(PODS, NS)
    assert cache.of(NS, JOB, UID) is None  # passes LIST meanwhile
    assert cache.of("elsewhere", JOB, UID) is not None
    # The LIST (at rv 20) lacks worker-1 (deleted in the gap); worker-2 was made again later
    # (rv 30 > 20: the LIST predates it) and stays.
    cache.put(PODS, _obj("job-worker-2", 30, uid="again"))
    fixed = cache.audit(PODS, NS, {"job-worker-0"}, 20)
    assert fixed == {JOB}
    children = cache.of(NS, JOB, UID)
    assert children is not None
    assert sorted(p.name for p in children.pods) == ["job-worker-0", "job-worker-2"]
    assert cache.places() == {(PODS, NS)}


def test_an_audit_never_brings_back_what_was_deleted_after_the_list() -> None:
    cache = _trusted()
    cache.put(PODS, _obj("job-worker-0", 10))
    cache.drop(PODS, _obj("job-worker-0", 15))  # its DELETED event after the LIST's answer
    assert cache.audit(PODS, NS, {"job-worker-0"}, 12) == set()
    children = cache.of(NS, JOB, UID)
    assert children is not None and children.pods == []


def test_pending_echoes_of_children_make_a_pass_list() -> None:
    echoes = Echoes()
    job = (NS, JOB)
    echoes.expect(job, ("tfjobs", JOB), "MODIFIED")
    assert echoes.pending(job, (PODS, SERVICES)) is False  # the status write does not count
    echoes.expect(job, (PODS, "job-worker-0"))
    assert echoes.pending(job, (PODS, SERVICES)) is True  # in flight
    echoes.created(job, (PODS, "job-worker-0"), "7")
    assert echoes.pending(job, (PODS, SERVICES)) is True  # made, its event not seen yet
    echoes.seen(job, (PODS, "job-worker-0"), "ADDED", "7")
    assert echoes.pending(job, (PODS, SERVICES)) is False


@pytest.mark.controlplane
@pytest.mark.timeout(120)
def test_start_up_list_and_audit_on_the_apiserver(admin: Api, control_plane: ControlPlane) -> None:
    """The start-up LIST reads every child (in pages); a child deleted while no watch saw it
    (a watch gap) is dropped by the next audit, and its job gets a pass."""
    ns = new_namespace(admin, "sync")
    for i in range(5):
        meta = {"name": f"job-worker-{i}", "labels": replica_labels(JOB, "Worker", i)}
        admin.create(PODS_PATH.format(ns=ns), {"metadata": meta, "spec": _POD_SPEC})
    requested: list[tuple[str, str]] = []

    async def scenario() -> tuple[int, list[str]]:
        kube = KubeClient.load(control_plane.kubeconfig)
        cache = ChildCache()
        sync = ChildSync(cache, kube, [PODS], [ns], requested.append, page=2)
        await sync.start()
        listed = len(cache)
        admin.delete(f"{PODS_PATH.format(ns=ns)}/job-worker-3")  # no watch runs here: a gap
        await sync._audit(PODS, ns)
        children = cache.of(ns, JOB, UID)
        sync.close()
        await kube.close()
        assert children is not None
        return listed, sorted(p.name for p in children.pods)

    listed, left = asyncio.run(scenario())
    assert listed == 5
    assert left == [f"job-worker-{i}" for i in (0, 1, 2, 4)]
    assert requested == [(ns, JOB)]
