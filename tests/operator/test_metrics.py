"""`/metrics` of the running operator after real lifecycles on the real apiserver: every counter
moved by exactly what happened (Kubeflow's job counters by namespace, recreations by reason, API
errors by verb and code, passes, the creation clock), and the gauges match the jobs.

No kubelet: the test plays it (pods/status). One operator, fresh, so its counters start at 0;
its jobs live in one namespace, which every series is filtered by.
"""

from __future__ import annotations

import socket
import subprocess
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports
from tests.harness.operator_run import (
    OPERATOR_CMD,
    Api,
    OperatorProcess,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(240)]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample (0 when the series does not exist yet)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum over the series of `name` whose labels include `labels`."""
    return sum(
        v for (n, have), v in samples.items() if n == name and set(labels.items()) <= set(have)
    )


@pytest.fixture(scope="module")
def operator(admin: Api, start_operator: StartOperator) -> tuple[str, int, OperatorProcess]:
    ns = new_namespace(admin, "metrics")
    (port,) = free_ports(1)
    proc = start_operator(ns, args=(f"--metrics-port={port}",))
    wait(lambda: _up(port), "/metrics to answer")
    return ns, port, proc


def _up(port: int) -> bool:
    try:
        scrape(port)
    except OSError:
        return False
    return True


def _job(admin: Api, ns: str, name: str, **replicas: dict) -> dict[str, dict]:
    admin.create_tfjob(ns, tfjob(name, replicas))
    count = sum(spec.get("replicas", 1) for spec in replicas.values())
    return wait(lambda: len(p := admin.pods(ns, name)) == count and p, f"pods of {name}")


def _until(admin: Api, ns: str, name: str, type_: str) -> None:
    wait(lambda: condition(admin.tfjob(ns, name), type_), f"{name} {type_}")


def test_counters_move_by_exactly_what_happened(
    admin: Api, operator: tuple[str, int, OperatorProcess]
) -> None:
    ns, port, proc = operator
    job = {"job_namespace": ns, "framework": "tensorflow"}
    before = scrape(port)
    assert value(before, "training_operator_jobs_created_total", **job) == 0

    # 1. a job that succeeds
    ok = unique("ok")
    _job(admin, ns, ok, Worker={})
    admin.set_pod_phase(ns, f"{ok}-worker-0", "Running")
    _until(admin, ns, ok, "Running")
    admin.set_pod_phase(ns, f"{ok}-worker-0", "Succeeded", exit_code=0)
    _until(admin, ns, ok, "Succeeded")

    # 2. a job that fails (restartPolicy Never, exit 1)
    bad = unique("bad")
    _job(admin, ns, bad, Worker={})
    admin.set_pod_phase(ns, f"{bad}-worker-0", "Failed", exit_code=1)
    _until(admin, ns, bad, "Failed")

    # 3. a job restarted once (an evicted pod under OnFailure is recreated), then succeeding
    again = unique("again")
    first = _job(admin, ns, again, Worker={"restartPolicy": "OnFailure"})[f"{again}-worker-0"]
    admin.set_pod_phase(ns, f"{again}-worker-0", "Failed", exit_code=137, reason="Evicted")
    _until(admin, ns, again, "Restarting")
    wait(
        lambda: (
            (p := admin.pods(ns, again).get(f"{again}-worker-0"))
            and p["metadata"]["uid"] != first["metadata"]["uid"]
        ),
        "the evicted pod recreated",
    )
    admin.set_pod_phase(ns, f"{again}-worker-0", "Succeeded", exit_code=0)
    _until(admin, ns, again, "Succeeded")

    # 4. a pod template the apiserver refuses: one failed create (422), the job Failed
    invalid = unique("inval")
    # (requests above limits: the pod's own validation refuses it, the CRD's schema cannot)
    resources = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    containers = [{"name": "tensorflow", "image": "example.com/t:1", "resources": resources}]
    admin.create_tfjob(ns, tfjob(invalid, {"Worker": {"containers": containers}}))
    _until(admin, ns, invalid, "Failed")

    # 5. a deletion
    admin.delete(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{ok}")
    wait(lambda: admin.tfjob(ns, ok) is None, "the job deleted")

    def settled() -> Samples | None:
        now = scrape(port)
        done = value(now, "training_operator_jobs_deleted_total", **job) == 1
        return now if done and value(now, "taas_operator_workqueue_depth") == 0 else None

    after = wait(settled, "the deletion counted and the queue empty")
    assert value(after, "training_operator_jobs_created_total", **job) == 4
    assert value(after, "training_operator_jobs_successful_total", **job) == 2
    assert value(after, "training_operator_jobs_failed_total", **job) == 2
    assert value(after, "training_operator_jobs_restarted_total", **job) == 1
    assert value(after, "training_operator_jobs_deleted_total", **job) == 1
    assert total(after, "taas_operator_pod_recreations_total", job_namespace=ns) == 1
    assert (
        value(after, "taas_operator_pod_recreations_total", job_namespace=ns, reason="Evicted") == 1
    )
    # requests above limits: only the pod carries them, and only it is refused
    errors = {
        dict(labels)["resource"]: v
        for (name, labels), v in after.items()
        if name == "taas_operator_api_errors_total"
        and dict(labels)["verb"] == "create"
        and dict(labels)["code"] == "422"
    }
    assert errors == {"pods": 1}
    assert total(after, "taas_operator_api_errors_total") == 1  # nothing else failed
    # jobs by state: the three left (the deleted one is gone)
    assert value(after, "taas_operator_jobs", job_namespace=ns, state="Succeeded") == 1
    assert value(after, "taas_operator_jobs", job_namespace=ns, state="Failed") == 2
    assert total(after, "taas_operator_jobs", job_namespace=ns) == 3
    # every pod of jobs 1-3 was created: their clocks stopped once each; job 4 never had one
    assert value(after, "taas_operator_job_pods_created_seconds_count") == 3
    assert value(after, "taas_operator_job_pods_created_seconds_sum") > 0
    passes = value(after, "taas_operator_pass_duration_seconds_count", outcome="ok")
    assert passes >= 8  # at least two passes per job
    assert value(after, "taas_operator_pass_duration_seconds_count", outcome="error") == 0
    assert "Traceback" not in proc.log()


def test_metrics_port_taken_is_a_clear_exit_2(control_plane: ControlPlane) -> None:
    """A metrics port another process holds: one message naming the flag, exit 2."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        done = subprocess.run(
            [
                *OPERATOR_CMD,
                "--namespace=default",
                "--kubeconfig",
                control_plane.kubeconfig,
                "--health-port=0",
                f"--metrics-port={taken}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert f"cannot serve /metrics on 127.0.0.1:{taken}" in done.stderr
    assert "--metrics-port" in done.stderr and "Traceback" not in done.stderr
