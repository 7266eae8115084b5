"""Replicas the scheduler cannot place: the job says how many of each type and why, in the
scheduler's words, keeps the count current, and runs again once they are placed; `taas get`
shows Waiting and the reason Unschedulable in its STATE and REASON columns, the dashboard
"Waiting: Unschedulable". No I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from taas_operator.api import TFJob, TFJobStatus
from taas_operator.client.console import jobs_table, not_running
from taas_operator.dashboard.views import job_state
from taas_operator.planner import ObservedPod, Plan, plan_job

from .helpers import job, pod

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
NO_GPU = (
    "0/20 nodes are available: 20 Insufficient nvidia.com/gpu. preemption: 0/20 nodes are "
    "available: 20 No preemption victims found for incoming pod."
)


def step(tfjob: TFJob, pods: list[ObservedPod], now: datetime = T0) -> Plan:
    plan = plan_job(tfjob, pods, now)
    tfjob.status = TFJobStatus.model_validate(plan.status.to_dict())
    return plan


def test_the_scheduler_message_is_read_from_the_pod_scheduled_condition():
    manifest = {
        "metadata": {
            "name": "mnist-worker-0",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": NO_GPU,
                }
            ],
        },
    }
    observed = ObservedPod.from_manifest(manifest)
    assert observed is not None and observed.unschedulable == NO_GPU
    manifest["status"]["conditions"][0].update(status="True", reason="", message="")  # type: ignore[index]
    observed = ObservedPod.from_manifest(manifest)
    assert observed is not None and observed.unschedulable is None


def test_unschedulable_replicas_are_counted_per_type_on_running_false_and_kept_current():
    tfjob = job({"PS": 1, "Worker": 8})
    step(tfjob, [])
    placed = [pod("PS", 0), *(pod("Worker", i) for i in range(5))]
    unplaced = [pod("Worker", i, "Pending", unschedulable=NO_GPU) for i in range(5, 8)]
    plan = step(tfjob, placed + unplaced, T0 + timedelta(seconds=5))
    running = plan.status.condition("Running")
    assert running is not None and running.status == "False"
    assert running.reason == "Unschedulable"
    assert running.message == (
        f"TFJob ns1/mnist is not running: 3 of 8 Worker pods unschedulable: {NO_GPU}"
    )
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "Unschedulable", running.message)
    ]
    assert plan.create_pods == [] and plan.delete_pods == []  # waiting is not failing

    # one more placed: the count follows (a message-only change is written)
    unplaced = [pod("Worker", i, "Pending", unschedulable=NO_GPU) for i in range(6, 8)]
    plan = step(tfjob, [*placed, pod("Worker", 5), *unplaced], T0 + timedelta(seconds=9))
    running = plan.status.condition("Running")
    assert running is not None and running.message.endswith(
        f": 2 of 8 Worker pods unschedulable: {NO_GPU}"
    )
    assert plan.status_changed

    # the same again: nothing to write
    plan = step(tfjob, [*placed, pod("Worker", 5), *unplaced], T0 + timedelta(seconds=10))
    assert not plan.status_changed and plan.events == []

    # every replica placed and running: Running True again
    everyone = [pod("PS", 0), *(pod("Worker", i) for i in range(8))]
    plan = step(tfjob, everyone, T0 + timedelta(seconds=20))
    running = plan.status.condition("Running")
    assert running is not None and running.status == "True" and running.reason == "TFJobRunning"


def test_several_types_are_named_and_taas_get_shows_unschedulable():
    tfjob = job({"PS": 2, "Worker": 4})
    step(tfjob, [])
    unplaced = [
        pod("PS", 1, "Pending", unschedulable=NO_GPU),
        *(pod("Worker", i, "Pending", unschedulable=NO_GPU) for i in range(4)),
    ]
    step(tfjob, [pod("PS", 0), *unplaced], T0 + timedelta(seconds=3))
    running = tfjob.status.condition("Running")
    assert running is not None
    assert running.message == (
        "TFJob ns1/mnist is not running: 1 of 2 PS pods and 4 of 4 Worker pods unschedulable: "
        + NO_GPU
    )
    assert not_running(tfjob) == ("Unschedulable", running.message)
    assert jobs_table([tfjob], T0)[1].split()[:3] == ["mnist", "Waiting", "Unschedulable"]
    assert (tfjob.status.state, tfjob.status.state_reason) == ("Waiting", "Unschedulable")
    # the dashboard
    assert job_state(tfjob.to_dict()) == ("Waiting", "Unschedulable", running.message)
