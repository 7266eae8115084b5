"""The operator's own pod deleted mid-job: the chart's Deployment brings a new one, which picks
the job up from the cluster's state; the job completes and no replica pod is ever duplicated."""

from __future__ import annotations

import pytest

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import (
    OPERATOR_NS,
    condition,
    get_json,
    operator_pods,
    toolbox_tfjob,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node]


def test_operator_pod_deleted_mid_job(cluster: Cluster, operator: str, ns: str) -> None:
    script = 'if [ "$TASK_INDEX" = 0 ]; then sleep 40; fi; echo done; [ "$JOB_NAME" = worker ]'
    # The PS never exits by itself; the workers end after 40 s; cleanPodPolicy Running stops it.
    manifest = toolbox_tfjob("survivor", f"{script} || sleep 100000", {"PS": 1, "Worker": 2})
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest)
    selector = "training.kubeflow.org/job-name=survivor"

    def names() -> list[str]:
        pods = get_json(cluster, "-n", ns, "pods", "-l", selector)["items"]
        return [p["metadata"]["name"] for p in pods]

    def running() -> dict | None:
        return condition(get_json(cluster, "-n", ns, "tfjob", "survivor"), "Running")

    wait(running, "the job running", timeout=120, every=1.0)
    (old,) = operator_pods(cluster)
    cluster.kubectl("delete", "pod", "-n", OPERATOR_NS, old["metadata"]["name"], "--wait=false")
    most = 0

    def finished() -> dict | None:
        nonlocal most
        seen = names()
        assert len(seen) == len(set(seen)) and len(seen) <= 3, seen
        most = max(most, len(seen))
        job = get_json(cluster, "-n", ns, "tfjob", "survivor")
        return job if (condition(job, "Succeeded") or {}).get("status") == "True" else None

    def replaced() -> list[dict]:
        return [
            p
            for p in operator_pods(cluster)
            if p["metadata"]["uid"] != old["metadata"]["uid"]
            and p["status"].get("phase") == "Running"
        ]

    new = wait(replaced, "a new operator pod", timeout=120, every=1.0)
    assert len(new) == 1
    job = wait(finished, "the job Succeeded", timeout=300, every=0.5)
    assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert most == 3
    # The new operator finished it: its log names the job; the old pod is gone.
    log = cluster.kubectl("logs", "-n", OPERATOR_NS, new[0]["metadata"]["name"]).stdout
    assert f"{ns}/survivor" in log
    assert old["metadata"]["name"] not in [p["metadata"]["name"] for p in operator_pods(cluster)]
