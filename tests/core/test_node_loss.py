"""A replica whose node stops responding: Kubernetes evicts its pod (DisruptionTarget,
DeletionByTaintManager) but no kubelet confirms it stopped, so it would stay Terminating
forever. Past its grace period TaaS force-deletes it; OnFailure/ExitCode/Always recreate the
replica (Restarting names the node), Never fails the job naming the node. No I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from taas_operator.api import TFJob, TFJobStatus
from taas_operator.engine import ObservedPod, Plan, plan_job

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
