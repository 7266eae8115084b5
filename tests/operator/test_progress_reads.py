"""What the running operator reads as training progress, on the in-memory apiserver (the fast
tier): a program that publishes nothing changes nothing, only the port the chief's pod declared
is read, a host-network chief is not read. The progress in the status and kubectl:
test_progress.

No kubelet: the test plays it (pods/status, with podIP 127.0.0.1) and plays the training program
with the publisher (no TensorFlow needed: the document is what counts; tests/trainer checks
that a real trainer publishes it). The operator reads every 2 s here instead of 30 s.
"""

from __future__ import annotations

import time

import pytest

from taas.core.publish import Publisher, document
from taas_operator.processes import free_ports
from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    unique,
)
from tests.harness.waiting import wait
from tests.operator.fake_operator import module_fixtures
from tests.operator.progress_jobs import progress_job, progress_of, start_chief

pytestmark = [pytest.mark.fast, pytest.mark.timeout(180)]
INTERVAL = 2


admin, start_operator = module_fixtures()


@pytest.fixture(scope="module")
def ns(admin: Api, start_operator: StartOperator) -> str:
    name = new_namespace(admin, "prog")
    start_operator(
        name, args=(f"--progress-interval={INTERVAL}", "--operator-namespace=taas-system")
    )
    return name


def test_a_chief_without_the_library_changes_nothing(admin: Api, ns: str) -> None:
    """Nothing serves the port: no status.progress, and no write at all while the job runs."""
    port = free_ports(1)[0]
    name = unique("plain")
    progress_job(admin, ns, name, port)
    quiet = wait(lambda: admin.tfjob(ns, name), "the job")
    rv = quiet["metadata"]["resourceVersion"]
    time.sleep(4 * INTERVAL)  # several reads (all refused)
    job = admin.tfjob(ns, name) or {}
    assert job["metadata"]["resourceVersion"] == rv
    assert "progress" not in job["status"]


def test_progress_is_read_only_from_the_port_the_chief_declares(admin: Api, ns: str) -> None:
    """A tenant edits the job's TAAS_PROGRESS_PORT while its chief runs, to a port where
    something else answers (here a valid report, the worst case): the operator goes on reading
    the port the chief's pod declared when it was made, and nothing else lands in the status."""
    served, elsewhere = free_ports(2)
    chief, other = Publisher("worker:0", port=served), Publisher("worker:0", port=elsewhere)
    chief.update(document("worker:0", 10, 1000, 0.5, 100.0, 60.0))
    other.update(document("worker:0", 999, 1000, 0.0, 1.0, 1.0))
    name = unique("declared")
    start_chief(admin, ns, name, served)
    wait(lambda: progress_of(admin, ns, name).get("step") == 10, "the chief's report")

    env = [{"name": "TAAS_PROGRESS_PORT", "value": str(elsewhere)}]
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "env": env}]
    template = {"spec": {"containers": containers}}
    admin.patch_tfjob(ns, name, {"spec": {"tfReplicaSpecs": {"Worker": {"template": template}}}})
    chief.update(document("worker:0", 20, 1000, 0.4, 100.0, 50.0))
    wait(lambda: progress_of(admin, ns, name).get("step") == 20, "the chief's next report")
    time.sleep(3 * INTERVAL)  # reads enough to have gone elsewhere
    assert progress_of(admin, ns, name)["step"] == 20
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
    start_chief(admin, ns, name, port, hostNetwork=True)
    pod = admin.pods(ns, name)[f"{name}-worker-0"]
    assert "taas-progress" not in [p["name"] for p in pod["spec"]["containers"][0]["ports"]]
    time.sleep(3 * INTERVAL)  # several passes and intervals: nothing is read
    assert "progress" not in ((admin.tfjob(ns, name) or {}).get("status") or {})
