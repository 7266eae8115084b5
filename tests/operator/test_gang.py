"""Issue 23, operator side: `--gang-scheduler-name=scheduler-plugins` honours Kubeflow's
`runPolicy.schedulingPolicy` with scheduler-plugins' PodGroup (coscheduling).

The operator's side (the PodGroup it makes and keeps, the pods' labels and scheduler, the waiting
gang's condition) runs on the in-memory apiserver with PodGroups served (fast); what the CRDs
decide (scheduler-plugins' own PodGroup CRD from its Go module, `manifests/coscheduling/crd.yaml`,
the version TaaS builds; Kueue's CRDs; the TFJob CRD's bound) on the real one, with the
operator process. No scheduler and no
garbage collector run here: the tests write the scheduler's PodScheduled condition themselves,
and check the PodGroup's controller ownerReference (what makes the GC delete it with the job).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.build.binaries import KUEUE_VERSION, module_source
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.controller.reconcile import podgroups
from tests.crds import install_crd
from tests.harness.fakeapi import Store
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
from tests.operator.fake_operator import FakeCluster

pytestmark = pytest.mark.timeout(150)

PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
GANG = ("--gang-scheduler-name=scheduler-plugins",)
RETRY = "taas.dev/retry-gang"


def _group(admin: Api, ns: str, name: str) -> dict[str, Any] | None:
    return admin.find(f"{PODGROUPS.format(ns=ns)}/{name}")


def _unschedulable(admin: Api, ns: str, pod: str, said: str) -> None:
    """Write what the scheduler writes when it cannot place the pod."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    admin.merge_patch(
        f"{PODS.format(ns=ns)}/{pod}/status",
        {"status": {"phase": "Pending", "conditions": [{**condition, "message": said}]}},
    )


def _resources(cpu: str, gpu: int) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "nvidia.com/gpu": gpu}, "limits": {"nvidia.com/gpu": gpu}}


@pytest.fixture
def fake_cluster() -> Iterator[FakeCluster]:
    """The in-memory apiserver with scheduler-plugins' PodGroups served (its CRD installed)."""
    cluster = FakeCluster(Store(pod_groups=True))
    yield cluster
    cluster.stop()


@pytest.mark.fast
def test_each_tfjob_gets_its_pod_group(fake_admin: Api, start_fake_operator: StartOperator) -> None:
    ns = new_namespace(fake_admin, "gang")
    start_fake_operator(ns, args=GANG)
    name = unique("gang")
    container = {"name": "tensorflow", "image": "example.com/t:1", "resources": _resources("2", 1)}
    policy = {"minAvailable": 3, "scheduleTimeoutSeconds": 90, "queue": "team-a"}
    fake_admin.create_tfjob(
        ns,
        tfjob(
            name,
            {"PS": {}, "Worker": {"replicas": 3, "containers": [container]}},
            runPolicy={"schedulingPolicy": policy},
        ),
    )
    group = wait(lambda: _group(fake_admin, ns, name), "the PodGroup")
    job = fake_admin.tfjob(ns, name)
    assert job is not None
    # minAvailable 3 of 4 pods: PS-0 (no requests) and two workers, in replica type order.
    assert group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "4", "nvidia.com/gpu": "2"},
        "scheduleTimeoutSeconds": 90,
    }
    (owner,) = group["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "name": name,
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    pods = wait(lambda: len(fake_admin.pods(ns, name)) == 4 and fake_admin.pods(ns, name), "4 pods")
    for pod in pods.values():
        assert pod["metadata"]["labels"][GROUP_LABEL] == name
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"

    # The job grows: the PodGroup follows (its spec is put back to what the job wants).
    fake_admin.patch_tfjob(
        ns, name, {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 4}}}}
    )
    wait(
        lambda: (_group(fake_admin, ns, name) or {}).get("spec", {}).get("minMember") == 4,
        "minMember 4",
    )
    assert _group(fake_admin, ns, name)["spec"]["minResources"] == {
        "cpu": "6",
        "nvidia.com/gpu": "3",
    }


@pytest.mark.fast
def test_waiting_gang_is_said_in_status_and_events(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "gangw")
    start_fake_operator(ns, args=(*GANG, "--gang-pod-scheduler-name=coscheduler"))
    name = unique("gangw")
    fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 2}}))
    pods = wait(lambda: len(fake_admin.pods(ns, name)) == 2 and fake_admin.pods(ns, name), "2 pods")
    assert {p["spec"]["schedulerName"] for p in pods.values()} == {"coscheduler"}
    said = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    for pod in pods:
        _unschedulable(fake_admin, ns, pod, said)

    def running_false() -> dict[str, Any] | None:
        job = fake_admin.tfjob(ns, name) or {}
        for cond in (job.get("status") or {}).get("conditions") or []:
            if cond["type"] == "Running" and cond["status"] == "False":
                return dict(cond)
        return None

    cond = wait(running_false, "Running False")
    assert cond["reason"] == "WaitingForGang"
    message = f"TFJob {ns}/{name} is waiting for 2 pods to be scheduled together: {said}."
    assert cond["message"] == message
    events = wait(
        lambda: [e for e in fake_admin.events(ns, name) if e["reason"] == "WaitingForGang"],
        "the WaitingForGang event",
    )
    assert [(e["type"], e["message"]) for e in events] == [("Warning", message)]


@pytest.mark.fast
def test_a_waiting_gangs_pod_group_is_written_again_until_the_gang_runs(
    fake_admin: Api, start_fake_operator: StartOperator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Coscheduling does not look again at a gang it held back when a node becomes usable; the
    # operator writes the PodGroup again while the gang waits (intervals shortened here; the
    # placement after `kubectl uncordon` itself: tests/e2e/test_gang_across_nodes.py).
    monkeypatch.setattr(podgroups, "GANG_RETRY_FIRST_SECONDS", 0.2)
    monkeypatch.setattr(podgroups, "GANG_RETRY_MAX_SECONDS", 0.4)
    ns = new_namespace(fake_admin, "gangr")
    start_fake_operator(ns, args=GANG)
    name = unique("gangr")
    fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 2}}))
    pods = wait(lambda: len(fake_admin.pods(ns, name)) == 2 and fake_admin.pods(ns, name), "2 pods")

    def retried() -> str | None:
        return ((_group(fake_admin, ns, name) or {})["metadata"].get("annotations") or {}).get(
            RETRY
        )

    assert retried() is None  # nothing waits yet
    for pod in pods:
        _unschedulable(
            fake_admin, ns, pod, "0/3 nodes are available: 1 node(s) were unschedulable."
        )
    first = wait(retried, "the waiting gang's PodGroup written again")
    wait(lambda: retried() not in (None, first), "and again while it waits")

    for pod in pods:  # the gang placed and running: no more writes
        scheduled = {"type": "PodScheduled", "status": "True"}
        fake_admin.merge_patch(
            f"{PODS.format(ns=ns)}/{pod}/status", {"status": {"conditions": [scheduled]}}
        )
        fake_admin.set_pod_phase(ns, pod, "Running")
    wait(lambda: condition(fake_admin.tfjob(ns, name), "Running"), "Running True")
    time.sleep(0.5)  # a write already under way when the pass ran
    last = retried()
    time.sleep(1.5)
    assert retried() == last


@pytest.mark.fast
def test_off_without_the_flag(fake_admin: Api, start_fake_operator: StartOperator) -> None:
    ns = new_namespace(fake_admin, "nogang")
    start_fake_operator(ns)
    name = unique("nogang")
    fake_admin.create_tfjob(
        ns,
        tfjob(
            name, {"Worker": {"replicas": 2}}, runPolicy={"schedulingPolicy": {"minAvailable": 2}}
        ),
    )
    pods = wait(lambda: len(fake_admin.pods(ns, name)) == 2 and fake_admin.pods(ns, name), "2 pods")
    wait(lambda: len(fake_admin.services(ns, name)) == 2, "services (the pass is done)")
    assert _group(fake_admin, ns, name) is None
    for pod in pods.values():
        assert GROUP_LABEL not in pod["metadata"]["labels"]
        assert pod["spec"]["schedulerName"] == "default-scheduler"


@pytest.mark.controlplane
def test_min_available_above_the_replicas_is_refused_by_the_crd(
    admin: Api, control_plane: ControlPlane
) -> None:
    ns = new_namespace(admin, "gangv")
    manifest = tfjob(
        "too-big", {"Worker": {"replicas": 2}}, runPolicy={"schedulingPolicy": {"minAvailable": 3}}
    )
    with pytest.raises(RuntimeError) as err:
        admin.create_tfjob(ns, manifest)
    assert "spec.runPolicy.schedulingPolicy.minAvailable" in str(err.value)
    assert "fix: lower minAvailable" in str(err.value)


@pytest.mark.controlplane
def test_kueue_examples_are_accepted_by_kueues_own_crds(
    control_plane: ControlPlane, tfjob_crd: Path
) -> None:
    """examples/gang/kueue-tfjob.yaml (ResourceFlavor, ClusterQueue, LocalQueue, TFJob) and
    kueue-priorities.yaml (WorkloadPriorityClasses) against the CRDs of the Kueue version TaaS
    builds: a server-side dry run, every object accepted."""
    bases = module_source("sigs.k8s.io/kueue", KUEUE_VERSION) / "config/components/crd/bases"
    for plural in ("resourceflavors", "clusterqueues", "localqueues", "workloadpriorityclasses"):
        install_crd(
            control_plane, bases / f"kueue.x-k8s.io_{plural}.yaml", f"{plural}.kueue.x-k8s.io"
        )
    examples = Path(__file__).resolve().parents[2] / "examples" / "gang"
    control_plane.kubectl("create", "namespace", "team-a", check=False)
    made = []
    for example in ("kueue-tfjob.yaml", "kueue-priorities.yaml"):
        done = control_plane.kubectl(
            "create", "--dry-run=server", "-f", str(examples / example), "-o", "name", check=False
        )
        assert done.returncode == 0, done.stderr
        made += done.stdout.split()
    assert made == [
        "resourceflavor.kueue.x-k8s.io/default-flavor",
        "clusterqueue.kueue.x-k8s.io/training",
        "localqueue.kueue.x-k8s.io/team-a",
        "tfjob.kubeflow.org/mnist-queued",
        "workloadpriorityclass.kueue.x-k8s.io/training-low",
        "workloadpriorityclass.kueue.x-k8s.io/training-high",
    ]


@pytest.mark.controlplane
def test_missing_pod_group_crd_is_a_warning_naming_the_fix(
    admin: Api, control_plane: ControlPlane, start_operator: StartOperator, podgroup_crd: Path
) -> None:
    """Gang scheduling on, scheduler-plugins' CRD absent: no pod is made without its group, a
    FailedCreatePodGroup Warning says what to install; once it is, the retried pass makes both."""
    crd = "podgroups.scheduling.x-k8s.io"
    control_plane.kubectl("delete", "crd", crd, "--wait=true")
    try:
        ns = new_namespace(admin, "gangx")
        start_operator(ns, args=GANG)
        name = unique("gangx")
        admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 2}}))
        events = wait(
            lambda: [e for e in admin.events(ns, name) if e["reason"] == "FailedCreatePodGroup"],
            "the FailedCreatePodGroup event",
        )
        assert events[0]["type"] == "Warning"
        assert f"Error creating PodGroup {name}" in events[0]["message"]
        assert "install scheduler-plugins' PodGroup CRD" in events[0]["message"]
        assert not admin.pods(ns, name)
    finally:
        install_crd(control_plane, podgroup_crd, name=crd)
    wait(lambda: _group(admin, ns, name), "the PodGroup once the CRD is back", timeout=40)
    wait(lambda: len(admin.pods(ns, name)) == 2, "the pods after their group", timeout=20)
