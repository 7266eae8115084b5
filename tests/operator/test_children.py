"""The child cache a pass plans from (pure, no apiserver): it follows watch events, leaves out
another incarnation's objects, notices a re-list (an object shown again unchanged) and then is
not trusted until an audit LIST has dropped what was deleted in the watch gap; and the echoes
tell a pass when its own creations are not in the watch yet (then it LISTs)."""

from __future__ import annotations

from typing import Any

from taas_operator.controller.children import PODS, POLICIES, SERVICES, ChildCache
from taas_operator.controller.echoes import Echoes
from taas_operator.engine import replica_labels

NS, JOB, UID = "team", "job", "uid-1"


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


def test_follows_adds_changes_and_deletions() -> None:
    cache = ChildCache()
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
    cache = ChildCache()
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
    cache = ChildCache()
    for i, rv in enumerate((10, 11, 12)):
        cache.put(PODS, _obj(f"job-worker-{i}", rv))
    assert cache.put(PODS, _obj("job-worker-0", 10)) is True  # the re-list
    cache.suspect(PODS, NS)
    assert cache.of(NS, JOB, UID) is None  # passes LIST meanwhile
    assert cache.of("elsewhere", JOB, UID) is not None
    # The LIST (at rv 20) lacks worker-1 (deleted in the gap); worker-2 was made again later
    # (rv 30 > 20: the LIST predates it) and stays.
    cache.put(PODS, _obj("job-worker-2", 30, uid="again"))
    fixed = cache.audit(PODS, NS, [_obj("job-worker-0", 10)], 20)
    assert fixed == {JOB}
    children = cache.of(NS, JOB, UID)
    assert children is not None
    assert sorted(p.name for p in children.pods) == ["job-worker-0", "job-worker-2"]
    assert cache.places() == {(PODS, NS)}


def test_an_audit_never_brings_back_what_was_deleted_after_the_list() -> None:
    cache = ChildCache()
    cache.put(PODS, _obj("job-worker-0", 10))
    listed = [_obj("job-worker-0", 10)]
    cache.drop(PODS, _obj("job-worker-0", 15))  # its DELETED event after the LIST's answer
    assert cache.audit(PODS, NS, listed, 12) == set()
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
