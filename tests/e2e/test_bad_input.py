"""Bad input on a real node: an image that does not exist (`ErrImageNeverPull`) and a container
that cannot start. The job's conditions name the replica and the kubelet's reason, and the
deadline or the backoff limit ends the job; nothing hangs."""

from __future__ import annotations

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


def test_missing_image_is_named_and_the_deadline_ends_the_job(
    cluster: Cluster, operator: str, ns: str
) -> None:
    manifest = toolbox_tfjob(
        "ghost",
        "true",
        image="taas.local/does-not-exist:1",
        run_policy={"activeDeadlineSeconds": 45},
    )
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest)

    def reported() -> dict | None:
        running = condition(get_json(cluster, "-n", ns, "tfjob", "ghost"), "Running")
        return running if running and running["reason"] == "ErrImageNeverPull" else None

    running = wait(reported, "the missing image reported on the job", timeout=90, every=1.0)
    assert running["status"] == "False"
    assert "pod ghost-worker-0 (Worker 0)" in running["message"]
    assert "taas.local/does-not-exist:1" in running["message"]
    job = wait_finished(cluster, ns, "ghost", timeout=120)
    failed = condition(job, "Failed") or {}
    assert failed.get("status") == "True", job["status"]
    assert "active longer than specified deadline" in failed["message"]
    assert (
        "ghost-worker-0 (Worker 0)" in failed["message"]
        and "ErrImageNeverPull" in failed["message"]
    )
    wait(
        lambda: not get_json(cluster, "-n", ns, "pods")["items"],
        "the pod removed",
        timeout=120.0,
        every=1.0,
    )


def test_container_that_cannot_start_is_named_and_the_backoff_ends_the_job(
    cluster: Cluster, operator: str, ns: str
) -> None:
    manifest = toolbox_tfjob(
        "broken", "", command=["/no/such/program"], restart_policy="OnFailure",
        run_policy={"backoffLimit": 2},
    )  # fmt: skip
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest)
    job = wait_finished(cluster, ns, "broken", timeout=240)
    failed = condition(job, "Failed") or {}
    assert failed.get("status") == "True", job["status"]
    assert "reached the specified backoff limit" in failed["message"]
    assert "broken-worker-0" in failed["message"] and "exit code 128" in failed["message"], failed
    events = get_json(cluster, "-n", ns, "events", "--field-selector", "involvedObject.name=broken")
    restarting = [e["message"] for e in events["items"] if e["reason"] == "TFJobRestarting"]
    assert any("broken-worker-0" in m for m in restarting), restarting
