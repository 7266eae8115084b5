"""The TFJob scale subresource on the real apiserver, with the real operator: `kubectl scale`
and `taas scale` set the Worker replicas, `kubectl get --subresource=scale` reads them back
with the workers' selector, the operator makes or deletes the workers of the changed indices
only (the other pods keep their uid), says each change in one TFJobScaled event and counts it
in /metrics; a count past the replica bound, or a job without a Worker type, is refused.

No kubelet runs: the pods stay Pending, which is all that making and deleting them needs."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from typing import Any

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api import parse_tfjob
from taas_operator.planner.budget import job_bytes
from taas_operator.processes import free_ports
from tests.harness.operator_run import (
    Api,
    StartOperator,
    named_in_event,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]
TAAS = [sys.executable, "-m", "taas_operator.cli"]
SELECTOR = (
    "training.kubeflow.org/operator-name=tfjob-controller,"
    "training.kubeflow.org/job-name={name},training.kubeflow.org/replica-type=worker"
)


def _kubectl(plane: ControlPlane, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return plane.kubectl("-n", ns, *args, check=False)


def _taas(plane: ControlPlane, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TAAS, *args, "--kubeconfig", plane.kubeconfig, "-n", ns],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _uids(admin: Api, ns: str, name: str, names: list[str]) -> dict[str, str]:
    """The uids of the job's pods once exactly `names` exist (and their services)."""

    def settled() -> dict[str, str] | None:
        pods, services = admin.pods(ns, name), admin.services(ns, name)
        if sorted(pods) != sorted(names) or sorted(services) != sorted(names):
            return None
        return {n: p["metadata"]["uid"] for n, p in pods.items()}

    return wait(settled, f"pods and services {names}", timeout=60)


def _seen(admin: Api, ns: str, name: str, workers: int) -> dict[str, Any]:
    def seen() -> dict[str, Any] | None:
        status = (admin.tfjob(ns, name) or {}).get("status") or {}
        return status if status.get("workerReplicas") == workers else None

    return wait(seen, f"status.workerReplicas {workers}", timeout=60)


def test_scaling_2_4_1_touches_only_the_changed_workers(
    admin: Api, start_operator: StartOperator, control_plane: ControlPlane
) -> None:
    ns = new_namespace(admin, "scale")
    (port,) = free_ports(1)
    start_operator(ns, args=(f"--metrics-port={port}",))
    name = unique("elastic")
    admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2}}))
    first = _uids(admin, ns, name, [f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"])
    status = _seen(admin, ns, name, 2)
    assert status["replicaStatuses"]["Worker"]["selector"] == SELECTOR.format(name=name)

    scaled = _kubectl(control_plane, ns, "scale", f"tfjob/{name}", "--replicas=4")
    assert scaled.returncode == 0, scaled.stderr
    _seen(admin, ns, name, 4)
    four = _uids(admin, ns, name, [*first, f"{name}-worker-2", f"{name}-worker-3"])
    assert {n: four[n] for n in first} == first  # none of the first three made again

    read = _kubectl(control_plane, ns, "get", f"tfjob/{name}", "--subresource=scale", "-o", "json")
    assert read.returncode == 0, read.stderr
    scale = json.loads(read.stdout)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 4
    assert scale["status"]["selector"] == SELECTOR.format(name=name)
    selector = scale["status"]["selector"]
    selected = _kubectl(control_plane, ns, "get", "pods", "-l", selector, "-o", "name")
    assert sorted(selected.stdout.split()) == [f"pod/{name}-worker-{i}" for i in range(4)]

    down = _taas(control_plane, ns, "scale", name, "--workers", "1")
    assert down.returncode == 0, down.stderr
    assert f'"{name}" scaled to 1 Worker replicas' in down.stdout
    _seen(admin, ns, name, 1)
    one = _uids(admin, ns, name, [f"{name}-ps-0", f"{name}-worker-0"])
    assert one == {n: first[n] for n in one}

    # one event per change (the same second: their order is not kept), the pass's creations
    # and deletions joined to it by the recorder
    said = {
        e["message"].split(". ")[0]: e["message"]
        for e in admin.events(ns, name)
        if e["reason"] == "TFJobScaled"
    }
    up = f"TFJob {name} scaled up from 2 to 4 Worker replicas"
    down_said = f"TFJob {name} scaled down from 4 to 1 Worker replicas"
    assert sorted(said) == sorted([up, down_said])
    assert named_in_event(said[up]) == [f"{name}-worker-2", f"{name}-worker-3"]
    deleted = sorted(named_in_event(said[down_said], "Deleted"))
    assert deleted == [f"{name}-worker-{i}" for i in (1, 2, 3)]

    def counted() -> list[str] | None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        lines = [x for x in text.splitlines() if x.startswith("taas_operator_job_scale_changes")]
        return sorted(lines) if len(lines) == 2 else None

    assert wait(counted, "the scale counter") == [
        f'taas_operator_job_scale_changes_total{{direction="down",job_namespace="{ns}"}} 1.0',
        f'taas_operator_job_scale_changes_total{{direction="up",job_namespace="{ns}"}} 1.0',
    ]


def test_a_count_past_the_bound_and_a_job_without_workers_are_refused(
    admin: Api, control_plane: ControlPlane
) -> None:
    ns = new_namespace(admin, "scale-bad")
    name, chief = unique("bounded"), unique("chief")
    admin.create_tfjob(ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2}}))
    admin.create_tfjob(ns, tfjob(chief, {"Chief": {}}))

    # the CRD's rules hold on the scale path: the type's bound, and the job's total
    past = _kubectl(control_plane, ns, "scale", f"tfjob/{name}", "--replicas=5001")
    assert past.returncode == 1
    assert (
        "Worker].replicas: Invalid value" in past.stderr and "must be at most 5000" in past.stderr
    )
    total = _kubectl(control_plane, ns, "scale", f"tfjob/{name}", "--replicas=5000")
    assert total.returncode == 1 and "more than 5000 replicas in total" in total.stderr
    assert admin.tfjob(ns, name)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2

    too_many = _taas(control_plane, ns, "scale", name, "--workers", "5001")
    assert too_many.returncode == 2 and "workers must be from 0 to 5000" in too_many.stderr
    total = _taas(control_plane, ns, "scale", name, "--workers", "5000")
    assert total.returncode == 2 and "more than 5000 replicas in total" in total.stderr

    # no Worker key: the apiserver cannot read the scale, and refuses to write one
    read = _kubectl(control_plane, ns, "get", f"tfjob/{chief}", "--subresource=scale")
    assert read.returncode == 1 and "does not exist" in read.stderr
    write = _kubectl(control_plane, ns, "scale", f"tfjob/{chief}", "--replicas=2")
    assert write.returncode == 1 and "Worker.template: Required value" in write.stderr
    no_worker = _taas(control_plane, ns, "scale", chief, "--workers", "2")
    assert no_worker.returncode == 2 and "no replica type spelled 'Worker'" in no_worker.stderr
    assert "Traceback" not in no_worker.stderr + too_many.stderr + total.stderr
    assert "Worker" not in admin.tfjob(ns, chief)["spec"]["tfReplicaSpecs"]


def test_a_scale_up_past_the_byte_budget_is_refused_and_the_job_goes_on(
    admin: Api, start_operator: StartOperator, control_plane: ControlPlane
) -> None:
    ns = new_namespace(admin, "scale-budget")
    name = unique("budget")
    manifest = tfjob(name, {"PS": {}, "Worker": {"replicas": 2}})
    sized = parse_tfjob({**manifest, "metadata": {"name": name, "namespace": ns}})
    at_40 = sized.model_copy(deep=True)
    at_40.spec.tf_replica_specs["Worker"].replicas = 40
    limit = (job_bytes(sized).total + job_bytes(at_40).total) // 2
    start_operator(ns, args=(f"--max-job-bytes={limit}",))
    admin.create_tfjob(ns, manifest)
    first = _uids(admin, ns, name, [f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"])
    _seen(admin, ns, name, 2)

    scaled = _kubectl(control_plane, ns, "scale", f"tfjob/{name}", "--replicas=40")
    assert scaled.returncode == 0, scaled.stderr  # the apiserver cannot count bytes

    def refusal() -> list[str] | None:
        found = [e for e in admin.events(ns, name) if e["reason"] == "ScaleRefused"]
        return [f"{e['type']}: {e['message']}" for e in found] or None

    said = wait(refusal, "the ScaleRefused event", timeout=60)
    assert len(said) == 1 and said[0].startswith(
        f"Warning: TFJob {ns}/{name}: scaling from 2 to 40 Worker replicas refused"
    )
    assert "over the limit" in said[0], said
    # the job goes on as it was: no pod made or remade, not failed, the count it runs with
    assert _uids(admin, ns, name, list(first)) == first
    job = admin.tfjob(ns, name) or {}
    assert job["status"]["workerReplicas"] == 2
    assert not any(c["type"] == "Failed" for c in job["status"].get("conditions") or [])

    back = _taas(control_plane, ns, "scale", name, "--workers", "3")
    assert back.returncode == 0, back.stderr
    _seen(admin, ns, name, 3)
    three = _uids(admin, ns, name, [*first, f"{name}-worker-2"])
    assert {n: three[n] for n in first} == first
    assert refusal() == said  # said once
