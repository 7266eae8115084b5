"""Issue 23, item 3b: `--kueue-pod-groups` makes each queued TFJob's pods one Kueue pod group,
admitted whole by a real Kueue's plain `pod` integration (its TFJob integration off).

Real: kube-apiserver + etcd, the operator process, Kueue v0.19.2's manager with its own CRDs,
RBAC and webhooks (`SchedulingStack`, `kueue_tfjob=False`). Not running: kubelet, scheduler,
garbage collector, pod GC: the tests play the kubelet (phases; a deleted pod that a kubelet
would stop is set Failed) and the garbage collector (a deleted job's pods deleted).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.cluster.scheduling import SchedulingOptions, SchedulingStack
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from tests.builds import needs
from tests.harness.operator_run import (
    PODS,
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.kueue_helpers import KUEUE, PRIORITY_LABEL, QUEUE_LABEL, kueue_object, queues

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
GATE = "kueue.x-k8s.io/admission"
FINALIZER = "kueue.x-k8s.io/managed"
POD_GROUPS = ("--kueue-pod-groups",)


@pytest.fixture(scope="module")
@needs("kueue")
def kueue_pods(
    control_plane: ControlPlane, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulingStack]:
    """Kueue's manager with its default integrations (`pod` among them), TFJob's off."""
    options = SchedulingOptions(kueue=True, kueue_tfjob=False)
    with SchedulingStack(control_plane, tmp_path_factory.mktemp("kueue"), options) as stack:
        yield stack


def job_with(
    name: str, queue: str, workers: int, *, ps: int = 0, policy: str = "Never", priority: str = ""
) -> dict[str, Any]:
    def replicas(count: int) -> dict[str, Any]:
        container = {
            "name": "tensorflow",
            "image": "example.com/t:1",
            "resources": {"requests": {"cpu": "1"}},
        }
        return {"replicas": count, "restartPolicy": policy, "containers": [container]}

    specs = {"Worker": replicas(workers), **({"PS": replicas(ps)} if ps else {})}
    job = tfjob(name, specs)
    job["metadata"]["labels"] = {
        QUEUE_LABEL: queue,
        **({PRIORITY_LABEL: priority} if priority else {}),
    }
    return job


def pods_of(admin: Api, ns: str, job: str) -> dict[str, dict[str, Any]]:
    return admin.pods(ns, job)


def live(admin: Api, ns: str, job: str) -> dict[str, dict[str, Any]]:
    return {
        n: p
        for n, p in pods_of(admin, ns, job).items()
        if not p["metadata"].get("deletionTimestamp")
    }


def gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == GATE for g in pod["spec"].get("schedulingGates") or [])


def group_workload(admin: Api, ns: str, group: str) -> dict[str, Any] | None:
    return admin.find(f"{KUEUE}/namespaces/{ns}/workloads/{group}")


def workload_is(admin: Api, ns: str, group: str, type_: str) -> dict[str, Any] | None:
    for cond in ((group_workload(admin, ns, group) or {}).get("status") or {}).get(
        "conditions"
    ) or []:
        if cond["type"] == type_ and cond["status"] == "True":
            return dict(cond)
    return None


def admitted_pods(admin: Api, ns: str, job: str, count: int) -> dict[str, dict[str, Any]]:
    """Wait until the job has `count` live pods, none behind Kueue's gate."""
    return dict(
        wait(
            lambda: (
                len(p := live(admin, ns, job)) == count
                and not any(gated(x) for x in p.values())
                and p
            ),
            f"{job}'s {count} pods admitted",
            timeout=60,
        )
    )


def end(admin: Api, ns: str, job: str) -> None:
    """Play the kubelet for a job that finished: worker 0 succeeds last (the job's success);
    the pods the operator then deletes end as a kubelet would end them (Failed, 143)."""
    for pod in sorted(live(admin, ns, job), key=lambda name: name.endswith("worker-0")):
        admin.set_pod_phase(ns, pod, "Running")
    for pod in sorted(live(admin, ns, job), key=lambda name: name.endswith("worker-0")):
        if "-ps-" not in pod:
            admin.set_pod_phase(ns, pod, "Succeeded")
    wait(lambda: condition(admin.tfjob(ns, job), "Succeeded"), f"{job} Succeeded")
    wait(
        lambda: all(
            p["metadata"].get("deletionTimestamp") or p["status"].get("phase") == "Succeeded"
            for p in pods_of(admin, ns, job).values()
        ),
        f"the operator to stop what still ran of {job}",
    )
    stop_deleted(admin, ns, job)


def stop_deleted(admin: Api, ns: str, job: str) -> None:
    """What a kubelet (or, for an unplaced pod, the pod GC) does to deleted pods: end them."""
    for name, pod in pods_of(admin, ns, job).items():
        if pod["metadata"].get("deletionTimestamp") and pod["status"].get("phase") not in (
            "Succeeded",
            "Failed",
        ):
            admin.set_pod_phase(ns, name, "Failed", exit_code=143)


def test_a_queued_job_is_admitted_whole_and_the_next_waits_for_its_quota(
    admin: Api, kueue_pods: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "podgroups")
    start_operator(ns, args=POD_GROUPS)
    queue = queues(admin, ns, cpu=4)
    first, second = unique("first"), unique("second")

    # 1 PS + 2 workers x 1 CPU = 3 of the queue's 4 CPUs: one job at a time.
    admin.create_tfjob(ns, job_with(first, queue, 2, ps=1))
    pods = admitted_pods(admin, ns, first, 3)
    (group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in pods.values()}
    for pod in pods.values():
        assert pod["metadata"]["labels"][QUEUE_LABEL] == queue
        assert pod["metadata"]["annotations"][TOTAL] == "3"
        assert FINALIZER in pod["metadata"]["finalizers"]  # Kueue manages them
    workload = group_workload(admin, ns, group)
    assert workload is not None
    assert sum(ps["count"] for ps in workload["spec"]["podSets"]) == 3
    assert workload_is(admin, ns, group, "Admitted")

    admin.create_tfjob(ns, job_with(second, queue, 2, ps=1))
    waiting = wait(
        lambda: (
            (c := (admin.tfjob(ns, second) or {}).get("status", {}).get("conditions"))
            and next((x for x in c if x["reason"] == "WaitingForAdmission"), None)
        ),
        "the second job waiting for admission",
        timeout=60,
    )
    assert waiting["type"] == "Running" and waiting["status"] == "False"
    second_pods = wait(
        lambda: len(p := live(admin, ns, second)) == 3 and p, "the second job's 3 pods"
    )
    assert all(gated(p) for p in second_pods.values())
    (second_group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in second_pods.values()}
    assert f"kubectl describe workload -n {ns} {second_group}" in waiting["message"]
    pending = wait(
        lambda: next(
            (
                c
                for c in ((group_workload(admin, ns, second_group) or {}).get("status") or {}).get(
                    "conditions", []
                )
                if c["type"] == "QuotaReserved" and c["status"] == "False"
            ),
            None,
        ),
        "Kueue's reason the second group waits",
        timeout=60,
    )
    assert "insufficient unused quota for cpu" in pending["message"], pending

    # The first job succeeds; the operator ends its group (the PS it stops included), Kueue
    # frees the quota and the pods' finalizers, then admits the second group whole.
    end(admin, ns, first)
    wait(lambda: workload_is(admin, ns, group, "Finished"), "the first group finished", timeout=60)
    wait(
        lambda: (
            not pods_of(admin, ns, first)
            or all(
                FINALIZER not in (p["metadata"].get("finalizers") or [])
                for p in pods_of(admin, ns, first).values()
            )
        ),
        "the first group's finalizers released",
        timeout=60,
    )
    admitted_pods(admin, ns, second, 3)
    finished = workload_is(admin, ns, group, "Finished")
    admitted = workload_is(admin, ns, second_group, "Admitted")
    assert finished and admitted
    assert admitted["lastTransitionTime"] >= finished["lastTransitionTime"]
    end(admin, ns, second)
    wait(lambda: workload_is(admin, ns, second_group, "Finished"), "second finished", timeout=60)


def test_a_failed_pod_is_replaced_in_its_admitted_group(
    admin: Api, kueue_pods: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "podgroups")
    start_operator(ns, args=POD_GROUPS)
    queue = queues(admin, ns, cpu=4)
    name = unique("replace")
    admin.create_tfjob(ns, job_with(name, queue, 2, policy="ExitCode"))
    pods = admitted_pods(admin, ns, name, 2)
    (group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in pods.values()}
    lost = f"{name}-worker-1"
    old_uid = pods[lost]["metadata"]["uid"]
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")
    admin.set_pod_phase(ns, lost, "Failed", exit_code=137)  # retryable under ExitCode

    # The operator removes Kueue's finalizer from the ended pod (its name is needed again) and
    # makes the replacement in the same group, which Kueue lets through: the group is admitted.
    replacement = wait(
        lambda: (
            (p := live(admin, ns, name).get(lost))
            and p["metadata"]["uid"] != old_uid
            and not gated(p)
            and p
        ),
        "the replacement pod, past Kueue's gate",
        timeout=60,
    )
    assert replacement["metadata"]["labels"][GROUP_LABEL] == group
    assert workload_is(admin, ns, group, "Admitted")
    assert not workload_is(admin, ns, group, "Evicted")
    job = admin.tfjob(ns, name)
    assert job is not None and job["status"]["recreations"][lost]["count"] == 1
    end(admin, ns, name)
    wait(lambda: workload_is(admin, ns, group, "Finished"), "the group finished", timeout=60)


def test_a_preempted_group_is_made_again_and_resumes_when_readmitted(
    admin: Api, kueue_pods: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "podgroups")
    start_operator(ns, args=POD_GROUPS)
    queue = queues(admin, ns, cpu=4, preemption=True)
    low_class, high_class = unique("low"), unique("high")
    for cls, value in ((low_class, 100), (high_class, 1000)):
        admin.create(
            f"{KUEUE}/workloadpriorityclasses",
            kueue_object("WorkloadPriorityClass", cls, value=value),
        )
    low, high = unique("low"), unique("high")
    # restartPolicy Never: a preemption is not a failure of the job.
    admin.create_tfjob(ns, job_with(low, queue, 3, priority=low_class))
    pods = admitted_pods(admin, ns, low, 3)
    (group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in pods.values()}
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")
    wait(lambda: condition(admin.tfjob(ns, low), "Running"), "low Running")

    admin.create_tfjob(ns, job_with(high, queue, 3, priority=high_class))
    # Kueue stops the low group's pods (TerminationTarget, deleted); the job says so.
    evicted = wait(
        lambda: next(
            (
                c
                for c in (admin.tfjob(ns, low) or {}).get("status", {}).get("conditions", [])
                if c["reason"] == "EvictedByKueue"
            ),
            None,
        ),
        "low evicted by Kueue",
        timeout=60,
    )
    assert "Preempted" in evicted["message"], evicted
    wait(lambda: not live(admin, ns, low), "every pod of low deleted by Kueue")
    stop_deleted(admin, ns, low)  # the kubelet ends them
    # Made again, in the same group, waiting behind Kueue's gate while high runs.
    wait(
        lambda: len(p := live(admin, ns, low)) == 3 and all(gated(x) for x in p.values()),
        "low's pods made again, gated",
        timeout=60,
    )
    assert {p["metadata"]["labels"][GROUP_LABEL] for p in live(admin, ns, low).values()} == {group}
    admitted_pods(admin, ns, high, 3)
    job = admin.tfjob(ns, low)
    assert job is not None and not condition(job, "Failed")
    end(admin, ns, high)

    # Readmitted: the same group's pods pass the gate, run and succeed.
    admitted_pods(admin, ns, low, 3)
    wait(
        lambda: (
            (c := (admin.tfjob(ns, low) or {})["status"]["conditions"])
            and any(x["reason"] == "AdmittedByKueue" for x in c)
        ),
        "low admitted again",
    )
    end(admin, ns, low)
    wait(lambda: workload_is(admin, ns, group, "Finished"), "low's group finished", timeout=60)


def test_suspend_ends_the_group_and_resume_forms_a_new_one(
    admin: Api, kueue_pods: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "podgroups")
    start_operator(ns, args=POD_GROUPS)
    queue = queues(admin, ns, cpu=4)
    name = unique("suspend")
    admin.create_tfjob(ns, job_with(name, queue, 2))
    pods = admitted_pods(admin, ns, name, 2)
    (group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in pods.values()}
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")

    admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"suspend": True}}})
    wait(lambda: condition(admin.tfjob(ns, name), "Suspended"), "Suspended")
    stop_deleted(admin, ns, name)
    # The group ended with the run: quota and finalizers freed, the pods gone.
    wait(lambda: workload_is(admin, ns, group, "Finished"), "the group ended", timeout=60)
    wait(lambda: not pods_of(admin, ns, name), "the suspended job's pods gone", timeout=60)

    admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    pods = admitted_pods(admin, ns, name, 2)
    (new_group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in pods.values()}
    assert new_group != group
    assert workload_is(admin, ns, new_group, "Admitted")
    end(admin, ns, name)


def test_a_deleted_jobs_group_is_ended(
    admin: Api, kueue_pods: SchedulingStack, start_operator: StartOperator
) -> None:
    ns = new_namespace(admin, "podgroups")
    start_operator(ns, args=POD_GROUPS)
    queue = queues(admin, ns, cpu=4)
    name = unique("deleted")
    admin.create_tfjob(ns, job_with(name, queue, 2))
    pods = admitted_pods(admin, ns, name, 2)
    (group,) = {p["metadata"]["labels"][GROUP_LABEL] for p in pods.values()}
    for pod in pods:
        admin.set_pod_phase(ns, pod, "Running")
    admin.delete(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{name}")
    # The garbage collector deletes the pods of the deleted job; the kubelet stops them.
    for pod in pods:
        admin.delete(f"{PODS.format(ns=ns)}/{pod}")
    stop_deleted(admin, ns, name)
    wait(lambda: workload_is(admin, ns, group, "Finished"), "the deleted job's group", timeout=60)
    wait(lambda: not pods_of(admin, ns, name), "the deleted job's pods gone", timeout=60)
