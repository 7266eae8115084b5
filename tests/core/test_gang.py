"""Gang scheduling, pure: the PodGroup of a TFJob, its pods' label and scheduler, and what the
job says while its gang waits (`engine.gang`, as Kubeflow's training-operator maps
`runPolicy.schedulingPolicy` with `--gang-scheduler-name=scheduler-plugins`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from taas_operator.api import TFJobValidationError, messages, parse_tfjob
from taas_operator.planner import (
    BuildOptions,
    ObservedPod,
    desired_pod_group,
    desired_pods,
    plan_job,
)
from taas_operator.planner.gang import gang_waiting, min_resources

from .helpers import manifest, pod

GANG = BuildOptions(gang_scheduler="scheduler-plugins")
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _with_resources(m: dict[str, Any], rtype: str, resources: dict[str, Any]) -> dict[str, Any]:
    m["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]["containers"][0]["resources"] = resources
    return m


def _job(replicas: dict[str, int], policy: dict[str, Any] | None = None, **resources: Any):
    m = manifest(replicas, run_policy={"schedulingPolicy": policy} if policy is not None else {})
    for rtype, res in resources.items():
        _with_resources(m, rtype, res)
    return parse_tfjob(m)


# (id, replicas, schedulingPolicy, per-type resources, expected PodGroup spec)
CASES: list[tuple[str, dict[str, int], dict[str, Any] | None, dict[str, Any], dict[str, Any]]] = [
    ("no-policy-every-replica", {"PS": 1, "Worker": 3}, None, {}, {"minMember": 4}),
    ("empty-policy", {"Worker": 2}, {}, {}, {"minMember": 2}),
    (
        "min-available",
        {"PS": 1, "Worker": 3},
        {"minAvailable": 2},
        {"PS": {"requests": {"cpu": "1"}}, "Worker": {"requests": {"cpu": "500m"}}},
        # the first 2 pods in replica type order: PS-0 and Worker-0
        {"minMember": 2, "minResources": {"cpu": "1500m"}},
    ),
    (
        "requests-summed-over-replicas",
        {"Chief": 1, "Worker": 4},
        None,
        {
            "Chief": {"requests": {"cpu": "2", "memory": "1Gi"}},
            "Worker": {"requests": {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"}},
        },
        {
            "minMember": 5,
            "minResources": {"cpu": "6", "memory": "3221225472", "nvidia.com/gpu": "4"},
        },
    ),
    (
        "limits-when-no-requests",
        {"Worker": 2},
        None,
        {"Worker": {"limits": {"nvidia.com/gpu": 2, "cpu": "250m"}}},
        {"minMember": 2, "minResources": {"cpu": "500m", "nvidia.com/gpu": "4"}},
    ),
    (
        "min-resources-given",
        {"Worker": 8},
        {"minResources": {"nvidia.com/gpu": 8, "cpu": "16"}},
        {"Worker": {"requests": {"cpu": "1"}}},
        {"minMember": 8, "minResources": {"cpu": "16", "nvidia.com/gpu": "8"}},
    ),
    (
        "timeout-queue-priority",
        {"Worker": 2},
        {"scheduleTimeoutSeconds": 120, "queue": "team-a", "priorityClass": "high"},
        {},
        # coscheduling's PodGroup has no queue or priority class (Kubeflow drops them too)
        {"minMember": 2, "scheduleTimeoutSeconds": 120},
    ),
]


@pytest.mark.parametrize(
    ("replicas", "policy", "resources", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_pod_group_spec(
    replicas: dict[str, int],
    policy: dict[str, Any] | None,
    resources: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    group = desired_pod_group(_job(replicas, policy, **resources), GANG)
    assert group is not None
    assert group["spec"] == expected


def test_pod_group_identity_and_owner() -> None:
    group = desired_pod_group(_job({"Worker": 2}), GANG)
    assert group is not None
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["kind"] == "PodGroup"
    meta = group["metadata"]
    assert (meta["name"], meta["namespace"]) == ("mnist", "ns1")
    assert meta["labels"]["training.kubeflow.org/job-name"] == "mnist"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": "mnist",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_off_without_a_gang_scheduler() -> None:
    job = _job({"Worker": 2}, {"minAvailable": 2})
    assert desired_pod_group(job, BuildOptions()) is None
    for p in desired_pods(job, BuildOptions()):
        assert "scheduling.x-k8s.io/pod-group" not in p["metadata"]["labels"]
        assert "schedulerName" not in p["spec"]


def test_pods_join_the_group_and_go_to_the_gang_scheduler() -> None:
    m = manifest({"PS": 1, "Worker": 2})
    m["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["schedulerName"] = "my-scheduler"
    pods = desired_pods(parse_tfjob(m), GANG)
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in pods} == {"mnist"}
    # a template's own scheduler is kept, as Kubeflow keeps it
    assert [p["spec"]["schedulerName"] for p in pods] == [
        "my-scheduler",
        "scheduler-plugins-scheduler",
        "scheduler-plugins-scheduler",
    ]
    other = BuildOptions(gang_scheduler="scheduler-plugins", gang_pod_scheduler="coscheduler")
    assert (
        desired_pods(parse_tfjob(manifest({"Worker": 1})), other)[0]["spec"]["schedulerName"]
        == "coscheduler"
    )


def test_quantities_are_exact() -> None:
    job = _job({"Worker": 3}, None, Worker={"requests": {"cpu": "0.1", "memory": "100M"}})
    assert min_resources(job, 3) == {"cpu": "300m", "memory": "300000000"}


def _unschedulable(rtype: str, index: int, message: str) -> ObservedPod:
    return pod(rtype, index, phase="Pending", unschedulable=message)


def test_gang_waiting_message() -> None:
    job = _job({"Worker": 8})
    said = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    pods = [_unschedulable("Worker", i, said) for i in range(8)]
    assert gang_waiting(job, pods, GANG) == (f"waiting for 8 pods to be scheduled together: {said}")
    assert gang_waiting(job, pods, BuildOptions()) is None  # no gang: not this message
    assert gang_waiting(job, [pod("Worker", i, phase="Pending") for i in range(8)], GANG) is None


def test_pods_sent_to_another_scheduler_are_no_gang() -> None:
    """A template naming its own scheduler keeps it (as in Kubeflow): those pods are placed one
    by one, so the job is not said to wait for a gang."""
    m = manifest({"Worker": 3})
    m["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "default-scheduler"
    pods = [_unschedulable("Worker", i, "0/1 nodes are available.") for i in range(3)]
    assert gang_waiting(parse_tfjob(m), pods, GANG) is None


def test_gang_of_min_available_already_running_does_not_wait() -> None:
    job = _job({"Worker": 4}, {"minAvailable": 2})
    pods = [pod("Worker", 0), pod("Worker", 1), *(_unschedulable("Worker", i, "") for i in (2, 3))]
    assert gang_waiting(job, pods, GANG) is None
    assert gang_waiting(job, pods[2:], GANG) == "waiting for 2 pods to be scheduled together"


def test_plan_says_the_gang_waits_once() -> None:
    job = _job({"PS": 1, "Worker": 2})
    said = "0/1 nodes are available: 1 Insufficient cpu."
    pods = [_unschedulable("PS", 0, said), *(_unschedulable("Worker", i, said) for i in (0, 1))]
    plan = plan_job(job, pods, NOW, options=GANG)
    running = plan.status.condition("Running")
    assert running is not None and running.status == "False"
    assert running.reason == "WaitingForGang"
    assert running.message == (
        f"TFJob ns1/mnist is waiting for 3 pods to be scheduled together: {said}."
    )
    warnings = [e for e in plan.events if e.reason == "WaitingForGang"]
    assert len(warnings) == 1 and warnings[0].type == "Warning"
    # the next pass, the same pods: no second event
    again = plan_job(job.model_copy(update={"status": plan.status}), pods, NOW, options=GANG)
    assert not [e for e in again.events if e.reason == "WaitingForGang"]


def test_pod_manifest_unschedulable_condition_is_read() -> None:
    body = {
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
                    "message": "0/3 nodes are available",
                }
            ],
        },
    }
    observed = ObservedPod.from_manifest(body)
    assert observed is not None and observed.unschedulable == "0/3 nodes are available"
    body["status"]["conditions"][0]["reason"] = "SchedulingGated"
    observed = ObservedPod.from_manifest(body)
    assert observed is not None and observed.unschedulable is None


@pytest.mark.parametrize(("min_available", "ok"), [(3, True), (4, False), (1, True)])
def test_validate_refuses_min_available_above_the_replicas(min_available: int, ok: bool) -> None:
    m = manifest({"PS": 1, "Worker": 2}, run_policy={"schedulingPolicy": {"minAvailable": 0}})
    m["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = min_available
    if ok:
        parse_tfjob(m)
        return
    with pytest.raises(TFJobValidationError) as err:
        parse_tfjob(m)
    assert [(e.path, e.message) for e in err.value.errors] == [
        ("spec.runPolicy.schedulingPolicy.minAvailable", messages.MIN_AVAILABLE_ABOVE_REPLICAS)
    ]
