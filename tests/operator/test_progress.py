"""Training progress through the running operator on the real apiserver: a chief serving the
trainer library's own publisher (`taas.core.publish.Publisher`, on 127.0.0.1) is read into
`status.progress`, `kubectl get tfjobs` shows PROGRESS and ETA, the writes stay at most one
per interval, the end shows 100%, and a program that publishes nothing changes nothing.

No kubelet: the test plays it (pods/status, with podIP 127.0.0.1) and plays the training program
with the publisher (no TensorFlow needed: the document is what counts; tests/trainer checks
that a real trainer publishes it). The operator reads every 2 s here instead of 30 s.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from taas.core.publish import SCALARS, Publisher, document
from taas_controlplane.launcher import ControlPlane
from taas_operator.processes import free_ports
from tests.operator.operator_harness import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
    wait_for,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]
INTERVAL = 2


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "prog")
    start_operator(
        name, args=(f"--progress-interval={INTERVAL}", "--operator-namespace=taas-system")
    )
    return name


def _job(admin: Api, ns: str, name: str, port: int) -> None:
    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(port)}]
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    admin.create_tfjob(
        ns, tfjob(name, {"PS": {}, "Worker": {"replicas": 2, "containers": containers}})
    )
    wait_for(lambda: len(admin.pods(ns, name)) == 3, "3 pods")
    for pod in admin.pods(ns, name):
        admin.set_pod_phase(ns, pod, "Running", pod_ip="127.0.0.1")
    wait_for(lambda: condition(admin.tfjob(ns, name), "Running"), "Running")
    # Running is written once one replica runs; the status settles when it counts all three.
    wait_for(lambda: _all_active(admin.tfjob(ns, name)), "every replica active in the status")


def _all_active(job: dict[str, Any] | None) -> bool:
    replicas = ((job or {}).get("status") or {}).get("replicaStatuses") or {}
    active = {kind: (replicas.get(kind) or {}).get("active") for kind in ("PS", "Worker")}
    return active == {"PS": 1, "Worker": 2}


def _progress(admin: Api, ns: str, name: str) -> dict[str, Any]:
    return dict(((admin.tfjob(ns, name) or {}).get("status") or {}).get("progress") or {})


def test_progress_reaches_the_status_and_kubectl(
    admin: Api, ns: str, control_plane: ControlPlane
) -> None:
    port = free_ports(1)[0]
    chief = Publisher("worker:0", port=port)
    SCALARS.clear()
    SCALARS.log("accuracy", 0.91, step=240)
    SCALARS.log("accuracy", 0.93, step=250)
    chief.update(document("worker:0", 250, 1000, 0.4321, 1234.5, 95.0))
    name = unique("prog")
    _job(admin, ns, name, port)

    progress = wait_for(lambda: _progress(admin, ns, name), "status.progress")
    assert progress["step"] == 250 and progress["maxSteps"] == 1000
    assert (progress["percent"], progress["percentText"]) == (25, "25%")
    assert (progress["eta"], progress["etaSeconds"]) == ("1m35s", 95)
    assert progress["loss"] == 0.4321 and progress["examplesPerSecond"] == 1234.5
    assert progress["scalars"] == {
        "accuracy": [{"step": 240, "value": 0.91}, {"step": 250, "value": 0.93}]
    }
    table = control_plane.kubectl("get", "tfjobs", "-n", ns, name).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "WORKERS", "PS", "PROGRESS", "ETA", "AGE"]
    assert table[1].split()[:6] == [name, "Running", "2", "1", "25%", "1m35s"]

    # The job's NetworkPolicy admits the operator's namespace to the progress port, only.
    policy = admin.policies(ns, name)[name]["spec"]["ingress"]
    assert policy[-1] == {
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "taas-system"}}}
        ],
        "ports": [{"protocol": "TCP", "port": port}],
    }

    # A chief reporting ten times a second: the status is written at most once per interval.
    versions, steps = set(), set()
    started = time.monotonic()
    step = 250
    while time.monotonic() - started < 5 * INTERVAL:
        step += 1
        chief.update(document("worker:0", step, 1000, 0.4, 1000.0, 60.0))
        job = admin.tfjob(ns, name) or {}
        versions.add(job["metadata"]["resourceVersion"])
        steps.add(job["status"]["progress"]["step"])
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    assert 2 <= len(steps) - 1 <= elapsed / INTERVAL + 1, (steps, elapsed)
    assert len(versions) == len(steps)  # progress was the only thing written

    admin.set_pod_phase(ns, f"{name}-worker-0", "Succeeded", exit_code=0)
    wait_for(lambda: condition(admin.tfjob(ns, name), "Succeeded"), "Succeeded")
    done = _progress(admin, ns, name)
    assert (done["percentText"], done["eta"], done["etaSeconds"]) == ("100%", "0s", 0)


def test_a_chief_without_the_library_changes_nothing(admin: Api, ns: str) -> None:
    """Nothing serves the port: no status.progress, and no write at all while the job runs."""
    port = free_ports(1)[0]
    name = unique("plain")
    _job(admin, ns, name, port)
    quiet = wait_for(lambda: admin.tfjob(ns, name), "the job")
    rv = quiet["metadata"]["resourceVersion"]
    time.sleep(4 * INTERVAL)  # several reads (all refused)
    job = admin.tfjob(ns, name) or {}
    assert job["metadata"]["resourceVersion"] == rv
    assert "progress" not in job["status"]


def _start_job(admin: Api, ns: str, name: str, port: int, **pod_spec: Any) -> None:
    """A one-worker job (worker 0: the chief) serving progress on `port`, running at 127.0.0.1."""
    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(port)}]
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    manifest = tfjob(name, {"Worker": {"replicas": 1, "containers": containers}})
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(pod_spec)
    admin.create_tfjob(ns, manifest)
    wait_for(lambda: len(admin.pods(ns, name)) == 1, "the pod")
    admin.set_pod_phase(ns, f"{name}-worker-0", "Running", pod_ip="127.0.0.1")
    wait_for(lambda: condition(admin.tfjob(ns, name), "Running"), "Running")


def test_progress_is_read_only_from_the_port_the_chief_declares(admin: Api, ns: str) -> None:
    """A tenant edits the job's TAAS_PROGRESS_PORT while its chief runs, to a port where
    something else answers (here a valid report, the worst case): the operator goes on reading
    the port the chief's pod declared when it was made, and nothing else lands in the status."""
    served, elsewhere = free_ports(2)
    chief, other = Publisher("worker:0", port=served), Publisher("worker:0", port=elsewhere)
    chief.update(document("worker:0", 10, 1000, 0.5, 100.0, 60.0))
    other.update(document("worker:0", 999, 1000, 0.0, 1.0, 1.0))
    name = unique("declared")
    _start_job(admin, ns, name, served)
    wait_for(lambda: _progress(admin, ns, name).get("step") == 10, "the chief's report")

    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(elsewhere)}]
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    template = {"spec": {"containers": containers}}
    admin.patch_tfjob(ns, name, {"spec": {"tfReplicaSpecs": {"Worker": {"template": template}}}})
    chief.update(document("worker:0", 20, 1000, 0.4, 100.0, 50.0))
    wait_for(lambda: _progress(admin, ns, name).get("step") == 20, "the chief's next report")
    time.sleep(3 * INTERVAL)  # reads enough to have gone elsewhere
    assert _progress(admin, ns, name)["step"] == 20
    pod = admin.pods(ns, name)[f"{name}-worker-0"]
    ports = pod["spec"]["containers"][0]["ports"]
    assert {"name": "taas-progress", "containerPort": served, "protocol": "TCP"} in ports


def test_a_host_network_chief_is_not_read(admin: Api, ns: str) -> None:
    """With hostNetwork the chief's IP is its node's, and any port there is any service of the
    node: the operator reads none (the final report still comes from the pod's status)."""
    port = free_ports(1)[0]
    node_service = Publisher("worker:0", port=port)
    node_service.update(document("worker:0", 777, 1000, 0.1, 1.0, 1.0))
    name = unique("hostnet")
    _start_job(admin, ns, name, port, hostNetwork=True)
    pod = admin.pods(ns, name)[f"{name}-worker-0"]
    assert "taas-progress" not in [p["name"] for p in pod["spec"]["containers"][0]["ports"]]
    time.sleep(3 * INTERVAL)  # several passes and intervals: nothing is read
    assert "progress" not in ((admin.tfjob(ns, name) or {}).get("status") or {})
