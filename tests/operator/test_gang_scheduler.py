"""Issue 23: two TFJobs whose gangs cannot both fit, under scheduler-plugins' real scheduler.

Real: kube-apiserver + etcd, the operator, scheduler-plugins' scheduler and controller v0.33.5
(built from its Go module; Coscheduling on; the controller keeps PodGroup status, whose changes
make the scheduler look at waiting gangs again), its CRDs, and a Node object with 4 CPUs. No
kubelet: the scheduler binds pods to the node, and the test plays the kubelet by writing their
phase. The
node and the scheduler's name are this test's own, so no other test's pod is placed here.
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
    Api,
    StartOperator,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(240)]

NODES = "/api/v1/nodes"


@pytest.fixture(scope="module")
def scheduler_name() -> str:
    return unique("gang-sched")


@pytest.fixture(scope="module")
def node(admin: Api, scheduler_name: str) -> Iterator[str]:
    """A Node object with 4 CPUs and 8 GiB that only this test's pods may use (a taint they
    tolerate): the scheduler places pods on it; nothing runs them."""
    name = scheduler_name + "-node"
    admin.create(
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": [{"key": "taas.dev/gang-test", "effect": "NoSchedule"}]},
        },
    )
    # Admission adds node.kubernetes.io/not-ready at creation; no node controller runs here to
    # lift it once the node is Ready, so the test does.
    taint = {"key": "taas.dev/gang-test", "effect": "NoSchedule"}
    admin.merge_patch(f"{NODES}/{name}", {"spec": {"taints": [taint]}})
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test"}
    admin.merge_patch(
        f"{NODES}/{name}/status",
        {"status": {"capacity": capacity, "allocatable": capacity, "conditions": [ready]}},
    )
    yield name
    admin.delete(f"{NODES}/{name}")


@pytest.fixture(scope="module")
@needs("scheduler-plugins-scheduler", "scheduler-plugins-controller")
def gang_scheduler(
    control_plane: ControlPlane,
    podgroup_crd: Path,
    scheduler_name: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SchedulingStack]:
    """scheduler-plugins' scheduler (Coscheduling, under `scheduler_name`) and its controller
    (PodGroup status), started as the one-node and simulated clusters start them."""
    options = SchedulingOptions(coscheduling=True, scheduler_name=scheduler_name)
    with SchedulingStack(control_plane, tmp_path_factory.mktemp("gang"), options) as stack:
        yield stack


def _gang_job(name: str, workers: int) -> dict[str, Any]:
    container = {
        "name": "tensorflow",
        "image": "example.com/t:1",
        "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
    }
    toleration = {"key": "taas.dev/gang-test", "operator": "Exists", "effect": "NoSchedule"}
    job = tfjob(name, {"Worker": {"replicas": workers, "containers": [container]}})
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"] = [toleration]
    return job


def _placed(admin: Api, ns: str, job: str) -> dict[str, str]:
    """Pod name -> the node it was bound to ("" while unplaced)."""
    return {name: p["spec"].get("nodeName", "") for name, p in admin.pods(ns, job).items()}


def _running_false(admin: Api, ns: str, name: str) -> dict[str, Any] | None:
    job = admin.tfjob(ns, name) or {}
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond["type"] == "Running" and cond["status"] == "False":
            return dict(cond)
    return None


def test_two_gangs_that_cannot_both_fit_run_one_after_the_other(
    admin: Api,
    start_operator: StartOperator,
    gang_scheduler: SchedulingStack,
    scheduler_name: str,
    node: str,
) -> None:
    ns = new_namespace(admin, "gangs")
    gang = (
        "--gang-scheduler-name=scheduler-plugins",
        f"--gang-pod-scheduler-name={scheduler_name}",
    )
    start_operator(ns, args=gang)
    first, second = unique("first"), unique("second")
    # Each gang needs 2 workers x 2 CPUs: the node's 4 CPUs hold one gang, never parts of two.
    admin.create_tfjob(ns, _gang_job(first, 2))
    placed = wait(
        lambda: (p := _placed(admin, ns, first)) and len(p) == 2 and all(p.values()) and p,
        "the first gang placed",
        timeout=60,
    )
    assert set(placed.values()) == {node}
    admin.create_tfjob(ns, _gang_job(second, 2))
    cond = wait(lambda: _running_false(admin, ns, second), "the second gang waiting", timeout=60)
    assert cond["reason"] == "WaitingForGang"
    assert cond["message"].startswith(
        f"TFJob {ns}/{second} is waiting for 2 pods to be scheduled together: "
    )
    assert not any(_placed(admin, ns, second).values()), "a part of the second gang was placed"

    # The first job runs and finishes (the test plays the kubelet): its pods end, the node is
    # free, and the second gang is placed whole.
    for pod in placed:
        admin.set_pod_phase(ns, pod, "Running")
    for pod in placed:
        admin.set_pod_phase(ns, pod, "Succeeded")
    wait(
        lambda: (p := _placed(admin, ns, second)) and len(p) == 2 and all(p.values()),
        "the second gang placed after the first finished",
        timeout=90,
    )


def _free_the_node(admin: Api, node: str) -> None:
    """Every pod an earlier test left bound to the node ends (the test plays the kubelet)."""
    bound = admin.get(f"/api/v1/pods?fieldSelector=spec.nodeName={node}")["items"]
    for pod in bound:
        if pod["status"].get("phase") not in ("Succeeded", "Failed"):
            meta = pod["metadata"]
            admin.set_pod_phase(meta["namespace"], meta["name"], "Succeeded")


def test_lowering_min_available_of_a_waiting_gang_places_it_at_once(
    admin: Api,
    start_operator: StartOperator,
    gang_scheduler: SchedulingStack,
    scheduler_name: str,
    node: str,
) -> None:
    """Kubeflow's SDK gang flow, on the scheduler: a gang of 3 x 2 CPUs cannot fit the 4-CPU
    node and waits; `minAvailable: 2` (the PodGroup's minMember and minResources follow) lets
    two workers be placed within seconds. Coscheduling reads PodGroups through a cache of its
    own that can lag the event that wakes the waiting pods, so without TaaS marking the
    PodGroup again once its spec has changed the gang waits for the scheduler's 5-minute
    flush of unschedulable pods."""
    _free_the_node(admin, node)
    ns = new_namespace(admin, "lower")
    start_operator(
        ns,
        args=(
            "--gang-scheduler-name=scheduler-plugins",
            f"--gang-pod-scheduler-name={scheduler_name}",
        ),
    )
    name = unique("lower")
    admin.create_tfjob(ns, _gang_job(name, 3))
    cond = wait(lambda: _running_false(admin, ns, name), "the gang waiting", timeout=60)
    assert cond["reason"] == "WaitingForGang", cond
    assert not any(_placed(admin, ns, name).values())
    admin.patch_tfjob(ns, name, {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 2}}}})
    placed = wait(
        lambda: (p := _placed(admin, ns, name)) and sum(1 for n in p.values() if n) == 2 and p,
        "two workers placed once minAvailable is 2",
        timeout=45,
    )
    assert set(placed.values()) == {node, ""}, placed
