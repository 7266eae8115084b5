"""cleanPodPolicy on a real node: when the job succeeds, `Running` (TaaS's default, and what
the examples set) deletes the pods still running (a PS that never exits by itself) and keeps the
finished workers and their logs; `None` keeps the running PS."""

from __future__ import annotations

import json

import pytest

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    condition,
    get_json,
    toolbox_tfjob,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node]

# The PS serves forever; the worker works briefly and exits 0.
SCRIPT = 'if [ "$JOB_NAME" = ps ]; then exec sleep 100000; fi; sleep 3; echo "worker done"'


def _phases(cluster: Cluster, ns: str, job: str) -> dict[str, str]:
    pods = get_json(cluster, "-n", ns, "pods", "-l", f"training.kubeflow.org/job-name={job}")
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in pods["items"]}


@pytest.mark.parametrize("policy", ["Running", "None"])
def test_clean_pod_policy_on_success(cluster: Cluster, operator: str, ns: str, policy: str) -> None:
    name = f"clean-{policy.lower()}"
    manifest = json.loads(toolbox_tfjob(name, SCRIPT, {"PS": 1, "Worker": 1}))
    manifest["spec"]["runPolicy"]["cleanPodPolicy"] = policy
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(manifest))
    wait(
        lambda: _phases(cluster, ns, name).get(f"{name}-ps-0") == "Running",
        "the PS running",
        timeout=120.0,
        every=1.0,
    )
    job = wait_finished(cluster, ns, name, timeout=180)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job["status"]
    if policy == "Running":
        wait(
            lambda: f"{name}-ps-0" not in _phases(cluster, ns, name),
            "the PS removed",
            timeout=120.0,
            every=1.0,
        )
    else:
        assert _phases(cluster, ns, name)[f"{name}-ps-0"] == "Running"
    assert _phases(cluster, ns, name)[f"{name}-worker-0"] == "Succeeded"
    assert "worker done" in cluster.kubectl("logs", "-n", ns, f"{name}-worker-0").stdout
