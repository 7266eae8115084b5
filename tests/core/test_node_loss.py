"""A replica whose node stops responding: Kubernetes evicts its pod (DisruptionTarget,
DeletionByTaintManager) but no kubelet confirms it stopped, so it would stay Terminating
forever. Past its grace period TaaS force-deletes it; OnFailure/ExitCode/Always recreate the
replica (Restarting names the node), Never fails the job naming the node. No I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from taas_operator.api import TFJob, TFJobStatus
from taas_operator.planner import ObservedPod, Plan, plan_job

from .helpers import job, pod

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
GRACE_ENDS = T0 + timedelta(seconds=30)


def step(tfjob: TFJob, pods: list[ObservedPod], now: datetime) -> Plan:
    plan = plan_job(tfjob, pods, now)
    tfjob.status = TFJobStatus.model_validate(plan.status.to_dict())
    return plan


def evicted(rtype: str, index: int) -> ObservedPod:
    return pod(
        rtype,
        index,
        "Running",
        deleting=True,
        evicted_from_node=True,
        deletion_deadline=GRACE_ENDS,
        node="sim-node-0003",
    )


def test_an_evicted_pod_is_read_from_its_conditions() -> None:
    manifest = {
        "metadata": {
            "name": "mnist-worker-1",
            "deletionTimestamp": "2025-01-01T12:00:30Z",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        },
        "spec": {"nodeName": "sim-node-0003"},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
            ],
        },
    }
    observed = ObservedPod.from_manifest(manifest)
    assert observed is not None
    assert observed.evicted_from_node and observed.deleting
    assert (observed.node, observed.deletion_deadline) == ("sim-node-0003", GRACE_ENDS)
    manifest["status"]["conditions"][0]["reason"] = "PreemptionByScheduler"  # type: ignore[index]
    observed = ObservedPod.from_manifest(manifest)
    assert observed is not None and not observed.evicted_from_node
    assert observed.evicted == "PreemptionByScheduler: evicted"  # from a working node


def test_with_on_failure_the_lost_replica_is_force_deleted_after_its_grace_then_recreated() -> None:
    tfjob = job({"PS": 1, "Worker": 2}, restart_policy="OnFailure")
    everyone = [pod("PS", 0), pod("Worker", 0), pod("Worker", 1)]
    step(tfjob, everyone, T0 - timedelta(seconds=60))

    # evicted, grace period not over: nothing yet, a pass asked for when it ends
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), evicted("Worker", 1)], T0)
    assert plan.force_delete_pods == [] and plan.create_pods == []
    assert plan.requeue_at == GRACE_ENDS

    # grace over: force-deleted, counted, Restarting names the node; no replacement yet
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), evicted("Worker", 1)], GRACE_ENDS)
    assert plan.force_delete_pods == ["mnist-worker-1"]
    assert plan.create_pods == [] and plan.delete_pods == []
    restarting = plan.status.condition("Restarting")
    assert restarting is not None and restarting.status == "True"
    assert restarting.message == (
        "TFJob mnist is restarting because 1 Worker replica(s) were lost with their node (pod "
        "mnist-worker-1 (Worker 1) on node sim-node-0003, evicted after the node stopped "
        "responding)."
    )
    assert [(e.type, e.message) for e in plan.events] == [("Warning", restarting.message)]
    recreation = plan.status.recreations["mnist-worker-1"]
    assert (recreation.count, recreation.last_reason) == (1, "NodeLost")

    # the same pass again (the delete not seen yet): counted once, nothing new
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), evicted("Worker", 1)], GRACE_ENDS)
    assert plan.force_delete_pods == ["mnist-worker-1"] and plan.events == []
    assert plan.status.recreations["mnist-worker-1"].count == 1

    # gone: the replica is made again (on whichever node the scheduler picks)
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0)], GRACE_ENDS + timedelta(seconds=1))
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-1"]


def test_with_never_the_job_fails_naming_the_node() -> None:
    tfjob = job({"PS": 1, "Worker": 2}, restart_policy="Never")
    step(tfjob, [pod("PS", 0), pod("Worker", 0), pod("Worker", 1)], T0 - timedelta(seconds=60))
    plan = step(tfjob, [evicted("PS", 0), pod("Worker", 0), pod("Worker", 1)], GRACE_ENDS)
    failed = plan.status.condition("Failed")
    assert failed is not None and failed.status == "True"
    assert failed.message == (
        "TFJob ns1/mnist has failed because 1 PS replica(s) were lost with their node (pod "
        "mnist-ps-0 (PS 0) on node sim-node-0003, evicted after the node stopped responding)."
    )
    assert plan.force_delete_pods == ["mnist-ps-0"]
    assert plan.create_pods == []
    assert sorted(plan.delete_pods) == ["mnist-worker-0", "mnist-worker-1"]  # cleanPodPolicy


def test_an_ended_pod_on_a_lost_node_is_left_alone() -> None:
    tfjob = job({"Worker": 2}, restart_policy="OnFailure")
    step(tfjob, [pod("Worker", 0), pod("Worker", 1)], T0 - timedelta(seconds=60))
    done = evicted("Worker", 1).model_copy(update={"phase": "Succeeded", "exit_code": 0})
    plan = step(tfjob, [pod("Worker", 0), done], GRACE_ENDS)
    assert plan.force_delete_pods == [] and plan.create_pods == []


def gc_marked(rtype: str, index: int, gone: bool = False) -> ObservedPod:
    """A pod of a deleted node as the pod garbage collector leaves it: Failed, condition
    DisruptionTarget (DeletionByPodGC), no exit code; `gone` once it was deleted."""
    return pod(
        rtype,
        index,
        "Failed",
        node="sim-node-0004",
        node_deleted=True,
        gone=gone,
        deleting=gone,
    )


def test_a_pod_of_a_deleted_node_is_read_from_its_conditions() -> None:
    manifest = {
        "metadata": {
            "name": "mnist-ps-0",
            "labels": {
                "training.kubeflow.org/replica-type": "ps",
                "training.kubeflow.org/replica-index": "0",
            },
        },
        "spec": {"nodeName": "sim-node-0004"},
        "status": {
            "phase": "Failed",
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists",
                }
            ],
        },
    }
    observed = ObservedPod.from_manifest(manifest)
    assert observed is not None
    assert observed.node_deleted and observed.lost_with_node and not observed.evicted_from_node


def test_with_on_failure_a_deleted_nodes_replica_is_made_again_naming_the_node() -> None:
    tfjob = job({"PS": 1, "Worker": 2}, restart_policy="OnFailure")
    step(tfjob, [pod("PS", 0), pod("Worker", 0), pod("Worker", 1)], T0 - timedelta(seconds=60))

    # marked Failed by the pod GC, not deleted yet: lost (not a failed container), no twin
    plan = step(tfjob, [gc_marked("PS", 0), pod("Worker", 0), pod("Worker", 1)], T0)
    assert plan.status.condition("Failed") is None
    assert plan.create_pods == [] and plan.delete_pods == [] and plan.force_delete_pods == []
    restarting = plan.status.condition("Restarting")
    assert restarting is not None and restarting.message == (
        "TFJob mnist is restarting because 1 PS replica(s) were lost with their node (pod "
        "mnist-ps-0 (PS 0) on node sim-node-0004, which was deleted from the cluster)."
    )
    assert [(e.type, e.message) for e in plan.events] == [("Warning", restarting.message)]
    assert plan.status.replica_statuses["PS"].failed == 0

    # gone (remembered by the watch): made again at once, counted once
    plan = step(tfjob, [gc_marked("PS", 0, gone=True), pod("Worker", 0), pod("Worker", 1)], T0)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-ps-0"]
    recreation = plan.status.recreations["mnist-ps-0"]
    assert (recreation.count, recreation.last_reason) == (1, "NodeLost")


def test_with_never_a_deleted_nodes_replica_fails_the_job_naming_the_node() -> None:
    tfjob = job({"PS": 1, "Worker": 2}, restart_policy="Never")
    step(tfjob, [pod("PS", 0), pod("Worker", 0), pod("Worker", 1)], T0 - timedelta(seconds=60))
    # the pass may first see the pod already gone: the watch remembered why
    plan = step(tfjob, [pod("PS", 0), pod("Worker", 0), gc_marked("Worker", 1, gone=True)], T0)
    failed = plan.status.condition("Failed")
    assert failed is not None and failed.message == (
        "TFJob ns1/mnist has failed because 1 Worker replica(s) were lost with their node (pod "
        "mnist-worker-1 (Worker 1) on node sim-node-0004, which was deleted from the cluster)."
    )
    assert plan.create_pods == []
    assert not plan.status.recreations


def test_a_pod_deleted_otherwise_is_simply_made_again() -> None:
    """Without the pod GC's condition (a pod deleted by hand), a missing replica is made again
    even under Never, as Kubeflow does."""
    tfjob = job({"Worker": 2}, restart_policy="Never")
    step(tfjob, [pod("Worker", 0), pod("Worker", 1)], T0 - timedelta(seconds=60))
    plan = step(tfjob, [pod("Worker", 0)], T0)
    assert plan.status.condition("Failed") is None
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-1"]
