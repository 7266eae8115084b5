"""Kueue's pod groups, pure (`engine.kueue`, `--kueue-pod-groups`): the labels a queued TFJob's
pods get, which pods the operator releases or closes, and what the job says. Tested against a
real Kueue in tests/operator/test_kueue_pod_groups.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from taas_operator.api import parse_tfjob
from taas_operator.planner import BuildOptions, ObservedPod, plan_job

from .helpers import manifest, pod

GROUPS = BuildOptions(kueue_pod_groups=True)
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
QUEUE = "kueue.x-k8s.io/queue-name"
GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"


def queued(replicas: dict[str, int], labels: dict[str, str] | None = None, **kw: Any):
    m = manifest(replicas, **kw)
    m["metadata"]["labels"] = {QUEUE: "team-a", **(labels or {})}
    return m


def test_a_queued_jobs_pods_form_one_group_named_after_the_run() -> None:
    m = queued({"PS": 1, "Worker": 3}, {"kueue.x-k8s.io/priority-class": "high"})
    plan = plan_job(parse_tfjob(m), [], NOW, options=GROUPS)
    assert len(plan.create_pods) == 4
    groups = {p["metadata"]["labels"][GROUP] for p in plan.create_pods}
    assert len(groups) == 1
    (group,) = groups
    assert group.startswith("mnist-") and len(group) == len("mnist-") + 8
    for created in plan.create_pods:
        assert created["metadata"]["labels"][QUEUE] == "team-a"
        assert created["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
        assert created["metadata"]["annotations"][TOTAL] == "4"
    # The same run (startTime kept in status) names the same group on every pass...
    stored = m | {"status": plan.status.to_dict()}
    again = plan_job(parse_tfjob(stored), [], NOW + timedelta(minutes=5), options=GROUPS)
    assert {p["metadata"]["labels"][GROUP] for p in again.create_pods} == {group}
    # ...and the job says it waits for Kueue, where to look included.
    running = plan.status.condition("Running")
    assert running is not None and running.reason == "WaitingForAdmission"
    assert f"kubectl describe workload -n ns1 {group}" in running.message


def test_no_group_without_the_setting_or_the_queue_label() -> None:
    off = plan_job(parse_tfjob(queued({"Worker": 2})), [], NOW)
    unqueued = plan_job(parse_tfjob(manifest({"Worker": 2})), [], NOW, options=GROUPS)
    for plan in (off, unqueued):
        for created in plan.create_pods:
            labels = created["metadata"]["labels"]
            assert GROUP not in labels and QUEUE not in labels
            assert TOTAL not in (created["metadata"].get("annotations") or {})


def test_a_long_job_name_keeps_the_group_name_a_label_value() -> None:
    m = queued({"Worker": 1}, name="j" * 54)  # the longest a one-worker job's name can be
    plan = plan_job(parse_tfjob(m), [], NOW, options=GROUPS)
    (created,) = plan.create_pods
    assert len(created["metadata"]["labels"][GROUP]) <= 63


def test_a_resumed_job_forms_a_new_group_even_within_the_same_second() -> None:
    m = queued({"Worker": 2})
    first = plan_job(parse_tfjob(m), [], NOW, options=GROUPS)
    group = first.create_pods[0]["metadata"]["labels"][GROUP]
    m["status"] = first.status.to_dict()
    m["spec"]["runPolicy"]["suspend"] = True
    suspended = plan_job(parse_tfjob(m), [], NOW, options=GROUPS)
    m["status"] = suspended.status.to_dict()
    m["spec"]["runPolicy"]["suspend"] = False
    resumed = plan_job(parse_tfjob(m), [], NOW, options=GROUPS)  # the same second
    assert resumed.status.start_time is not None and resumed.status.start_time > NOW
    assert resumed.create_pods[0]["metadata"]["labels"][GROUP] != group


def member(
    rtype: str, index: int, phase: str = "Running", group: str = "mnist-0011aabb", **kw: Any
) -> ObservedPod:
    return pod(rtype, index, phase, kueue_group=group, kueue_finalizer=True, **kw)


def test_an_ended_pod_that_is_replaced_loses_kueues_finalizer() -> None:
    m = queued({"Worker": 3}, restart_policy="ExitCode")
    job = parse_tfjob(m | {"status": {"startTime": "2026-11-26T11:00:00Z"}})
    pods = [
        member("Worker", 0),
        member("Worker", 1, "Failed", exit_code=137),  # retryable: deleted and made again
        member("Worker", 2, "Failed", deleting=True, exit_code=143),  # being deleted, ended
    ]
    plan = plan_job(job, pods, NOW, options=GROUPS)
    assert plan.delete_pods == ["mnist-worker-1"]
    assert sorted(plan.release_pods) == ["mnist-worker-1", "mnist-worker-2"]
    assert not plan.close_pods


def test_a_pod_still_running_while_deleted_keeps_the_finalizer() -> None:
    job = parse_tfjob(queued({"Worker": 2}) | {"status": {"startTime": "2026-11-26T11:00:00Z"}})
    pods = [member("Worker", 0), member("Worker", 1, deleting=True)]
    assert not plan_job(job, pods, NOW, options=GROUPS).release_pods


def test_pods_kueue_stopped_are_no_failure_and_the_job_says_so() -> None:
    """restartPolicy Never: a pod Kueue stopped (preemption) does not fail the job."""
    job = parse_tfjob(queued({"Worker": 2}) | {"status": {"startTime": "2026-11-26T11:00:00Z"}})
    stopped = "Preempted: Preempted to accommodate a workload"
    pods = [
        member("Worker", 0, "Failed", deleting=True, exit_code=143, kueue_stopped=stopped),
        member("Worker", 1, "Running", deleting=True, kueue_stopped=stopped),
    ]
    plan = plan_job(job, pods, NOW, options=GROUPS)
    assert not plan.status.is_true("Failed")
    assert plan.release_pods == ["mnist-worker-0"]
    running = plan.status.condition("Running")
    assert running is not None and running.reason == "EvictedByKueue"
    assert stopped in running.message


def test_the_end_of_a_run_closes_the_group() -> None:
    """Succeeded, failed or suspended: the pods left are marked not retriable, once."""
    base = queued({"PS": 1, "Worker": 1})
    status = {"startTime": "2026-11-26T11:00:00Z"}
    ps, worker = member("PS", 0), member("Worker", 0, "Succeeded", exit_code=0)
    done = plan_job(parse_tfjob(base | {"status": status}), [ps, worker], NOW, options=GROUPS)
    assert done.status.is_true("Succeeded")
    assert sorted(done.close_pods) == ["mnist-ps-0", "mnist-worker-0"]
    closed = [p.model_copy(update={"kueue_closed": True}) for p in (ps, worker)]
    stored = base | {"status": done.status.to_dict()}
    assert not plan_job(parse_tfjob(stored), closed, NOW, options=GROUPS).close_pods
    base["spec"]["runPolicy"]["suspend"] = True
    suspended = plan_job(parse_tfjob(base | {"status": status}), [ps], NOW, options=GROUPS)
    assert suspended.close_pods == ["mnist-ps-0"] and suspended.delete_pods == ["mnist-ps-0"]


def test_admission_replaces_the_waiting_message() -> None:
    job = parse_tfjob(queued({"Worker": 2}))
    waiting = plan_job(job, [], NOW, options=GROUPS)
    group = waiting.create_pods[0]["metadata"]["labels"][GROUP]
    stored = queued({"Worker": 2}) | {"status": waiting.status.to_dict()}
    gated = [member("Worker", i, "Pending", group, kueue_gated=True) for i in range(2)]
    still = plan_job(parse_tfjob(stored), gated, NOW, options=GROUPS)
    assert still.status.condition("Running").reason == "WaitingForAdmission"
    ungated = [member("Worker", i, "Pending", group) for i in range(2)]
    admitted = plan_job(parse_tfjob(stored), ungated, NOW, options=GROUPS)
    running = admitted.status.condition("Running")
    assert running is not None and running.reason == "AdmittedByKueue"


def test_a_pass_that_sees_the_admission_with_every_pod_running_says_running() -> None:
    """No later pod event may come (every pod already runs): the job must not stay at
    "admitted, its pods are being placed"."""
    job = parse_tfjob(queued({"Worker": 2}))
    waiting = plan_job(job, [], NOW, options=GROUPS)
    group = waiting.create_pods[0]["metadata"]["labels"][GROUP]
    stored = queued({"Worker": 2}) | {"status": waiting.status.to_dict()}
    running_pods = [member("Worker", i, "Running", group) for i in range(2)]
    plan = plan_job(parse_tfjob(stored), running_pods, NOW, options=GROUPS)
    running = plan.status.condition("Running")
    assert running is not None and running.status == "True", running
