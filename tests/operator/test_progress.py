"""Training progress through the running operator on the real apiserver: a chief serving the
trainer library's own publisher (`taas.core.publish.Publisher`, on 127.0.0.1) is read into
`status.progress` (kept by the CRD's status schema), `kubectl get tfjobs` shows PROGRESS and ETA
(the CRD's printer columns), the writes stay at most one per interval, the end shows 100%. What
the operator reads and from where (nothing published, the declared port only, no host-network
chief): test_progress_reads, on the in-memory apiserver.

No kubelet: the test plays it (pods/status, with podIP 127.0.0.1) and plays the training program
with the publisher (no TensorFlow needed: the document is what counts; tests/trainer checks
that a real trainer publishes it). The operator reads every 2 s here instead of 30 s.
"""

from __future__ import annotations

import time

import pytest

from taas.core.publish import SCALARS, Publisher, document
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports
from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.progress_jobs import progress_job, progress_of

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]
INTERVAL = 2


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "prog")
    start_operator(
        name, args=(f"--progress-interval={INTERVAL}", "--operator-namespace=taas-system")
    )
    return name


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
    progress_job(admin, ns, name, port)

    progress = wait(lambda: progress_of(admin, ns, name), "status.progress")
    assert progress["step"] == 250 and progress["maxSteps"] == 1000
    assert (progress["percent"], progress["percentText"]) == (25, "25%")
    assert (progress["eta"], progress["etaSeconds"]) == ("1m35s", 95)
    assert progress["loss"] == 0.4321 and progress["examplesPerSecond"] == 1234.5
    assert progress["scalars"] == {
        "accuracy": [{"step": 240, "value": 0.91}, {"step": 250, "value": 0.93}]
    }
    table = control_plane.kubectl("get", "tfjobs", "-n", ns, name).stdout.splitlines()
    header = ["NAME", "STATE", "REASON", "WORKERS", "PS", "PROGRESS", "ETA", "AGE"]
    assert table[0].split() == header
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
    wait(lambda: condition(admin.tfjob(ns, name), "Succeeded"), "Succeeded")
    done = progress_of(admin, ns, name)
    assert (done["percentText"], done["eta"], done["etaSeconds"]) == ("100%", "0s", 0)
