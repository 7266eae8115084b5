"""Replicas that wait instead of running, as a real kubelet reports them: an image that cannot be
pulled, a container restarted in place. The job's conditions name the replica and the reason,
and backoffLimit or activeDeadlineSeconds end a job that never runs. No I/O, no TF."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from taas_operator.api import TFJob, TFJobStatus
from taas_operator.planner import ObservedPod, Plan, plan_job

from .helpers import job, pod

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
NEVER_PULL = 'Container image "nope:1" is not present with pull policy of Never'


def step(tfjob: TFJob, pods: list[ObservedPod], now: datetime = T0) -> Plan:
    plan = plan_job(tfjob, pods, now)
    tfjob.status = TFJobStatus.model_validate(plan.status.to_dict())
    return plan


def _pod_manifest(
    container_statuses: list[dict[str, Any]], init: list[dict[str, Any]] | None = None
):
    return {
        "metadata": {
            "name": "mnist-worker-0",
            "uid": "u1",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
        },
        "status": {
            "phase": "Pending",
            "containerStatuses": container_statuses,
            "initContainerStatuses": init or [],
        },
    }


def test_waiting_reason_is_read_from_the_tensorflow_container_or_an_init_container():
    never = {"waiting": {"reason": "ErrImageNeverPull", "message": NEVER_PULL}}
    observed = ObservedPod.from_manifest(
        _pod_manifest([{"name": "tensorflow", "restartCount": 0, "state": never}])
    )
    assert observed is not None
    assert (observed.waiting_reason, observed.waiting_message) == ("ErrImageNeverPull", NEVER_PULL)

    creating = {"waiting": {"reason": "ContainerCreating"}}
    sidecar = {"name": "sidecar", "state": never}
    observed = ObservedPod.from_manifest(
        _pod_manifest([sidecar, {"name": "tensorflow", "state": creating}])
    )
    assert observed is not None and observed.waiting_reason is None

    init = [{"name": "fetch", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    observed = ObservedPod.from_manifest(
        _pod_manifest(
            [{"name": "tensorflow", "state": {"waiting": {"reason": "PodInitializing"}}}], init
        )
    )
    assert observed is not None and observed.waiting_reason == "ImagePullBackOff"


def test_a_replica_that_cannot_start_sets_running_false_naming_it():
    tfjob = job({"PS": 1, "Worker": 1})
    step(tfjob, [])
    stuck = pod(
        "Worker", 0, "Pending", waiting_reason="ErrImageNeverPull", waiting_message=NEVER_PULL
    )
    plan = step(tfjob, [pod("PS", 0), stuck], T0 + timedelta(seconds=5))
    running = plan.status.condition("Running")
    assert running is not None and running.status == "False"
    assert running.reason == "ErrImageNeverPull"
    assert running.message == (
        "TFJob ns1/mnist is not running: pod mnist-worker-0 (Worker 0), container tensorflow is "
        f"waiting: ErrImageNeverPull: {NEVER_PULL}."
    )
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", "ErrImageNeverPull")]
    assert not plan.status.finished and plan.create_pods == []

    healed = step(tfjob, [pod("PS", 0), pod("Worker", 0)], T0 + timedelta(seconds=10))
    running = healed.status.condition("Running")
    assert running is not None and (running.status, running.reason) == ("True", "TFJobRunning")


def test_the_deadline_ends_a_job_that_never_starts_and_names_the_waiting_replica():
    tfjob = job({"Worker": 1}, run_policy={"activeDeadlineSeconds": 30})
    step(tfjob, [])
    stuck = [pod("Worker", 0, "Pending", waiting_reason="ImagePullBackOff")]
    assert step(tfjob, stuck, T0 + timedelta(seconds=10)).requeue_at == T0 + timedelta(seconds=30)
    plan = step(tfjob, stuck, T0 + timedelta(seconds=30))
    assert plan.status.is_true("Failed")
    assert plan.status.conditions[-1].message == (
        "Job mnist has failed because it was active longer than specified deadline (pod "
        "mnist-worker-0 (Worker 0), container tensorflow is waiting: ImagePullBackOff)"
    )
    assert plan.delete_pods == ["mnist-worker-0"]


def test_restart_in_place_sets_restarting_until_the_container_runs_again():
    tfjob = job({"Worker": 1}, restart_policy="OnFailure")
    step(tfjob, [])
    step(tfjob, [pod("Worker", 0)], T0 + timedelta(seconds=5))
    looping = pod(
        "Worker", 0, "Running", restart_count=1, exit_code=3, reason="Error",
        waiting_reason="CrashLoopBackOff", waiting_message="back-off 10s restarting",
    )  # fmt: skip
    plan = step(tfjob, [looping], T0 + timedelta(seconds=10))
    restarting = plan.status.condition("Restarting")
    assert restarting is not None and restarting.status == "True"
    assert plan.status.condition("Running") is None  # Restarting and Running replace each other
    assert restarting.message == (
        "TFJob mnist is restarting because 1 Worker replica(s) restarted in place (pod "
        "mnist-worker-0, container tensorflow, exit code 3, reason Error, restart count 1)."
    )
    assert plan.delete_pods == [] and plan.create_pods == []  # the kubelet restarts it, in place

    again = pod("Worker", 0, "Running", restart_count=1, exit_code=3, reason="Error")
    plan = step(tfjob, [again], T0 + timedelta(seconds=25))
    assert plan.status.condition("Restarting") is None
    assert plan.status.is_true("Running")


def test_backoff_limit_ends_a_crash_loop():
    tfjob = job({"Worker": 1}, restart_policy="OnFailure", run_policy={"backoffLimit": 2})
    step(tfjob, [])
    first = pod("Worker", 0, restart_count=1, exit_code=1, waiting_reason="CrashLoopBackOff")
    assert not step(tfjob, [first], T0 + timedelta(seconds=10)).status.finished
    second = pod("Worker", 0, restart_count=2, exit_code=1, waiting_reason="CrashLoopBackOff")
    plan = step(tfjob, [second], T0 + timedelta(seconds=30))
    assert plan.status.is_true("Failed")
    assert plan.status.conditions[-1].message.startswith(
        "Job mnist has failed because it has reached the specified backoff limit (last failure: "
        "pod mnist-worker-0, container tensorflow, exit code 1"
    )
