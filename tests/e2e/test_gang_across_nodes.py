"""Issue 31: gangs and queues across the 3 real nodes.

Real: the 3-node cluster the other `nodes3` tests share (no second start), with
scheduler-plugins' coscheduling and Kueue (TFJob integration) started on it for this module and
the chart's operator switched to `gangScheduling.schedulerName=scheduler-plugins`
(`gang_helpers.scheduling_on`, as on the one-node cluster). Every job here has one worker per
node: required pod anti-affinity on its name, so a gang of 3 needs all three nodes. Kueue runs
with a waitForPodsReady timeout of PODS_READY_TIMEOUT (issue 32): a queued job whose image is
not on the nodes is evicted and requeued.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.cluster.scheduling import SchedulingStack
from tests.builds import SCHEDULERS, needs
from tests.e2e.gang_helpers import (
    QUEUE_LABEL,
    assert_queued_for_quota,
    barrier_job,
    finished_at,
    kueue_queue,
    scheduled_at,
    scheduling_on,
    wait_job_condition,
    wait_workload_condition,
    workload_of,
)
from tests.harness.real_cluster import (
    HOSTNAME,
    JOB_LABEL,
    condition,
    get_json,
    job_pods,
    wait_finished,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node, pytest.mark.nodes3]

NODES = ["taas-node-0", "taas-node-1", "taas-node-2"]
PER_WORKER_MILLICPU = 200
#: The annotation TaaS writes on a waiting gang's PodGroup (operator: actions.py).
RETRY = "taas.dev/retry-gang"
#: The operator's longest interval between two such writes (60 s) and time to bind, well
#: under the scheduler's 5-minute flush, which alone would place the gang.
PLACED_AFTER_UNCORDON = 120.0
#: Long enough for a job's pods to start on a busy machine, short enough to wait out.
PODS_READY_TIMEOUT = 60.0


@pytest.fixture(scope="module")
@needs(*SCHEDULERS)
def gangs(
    cluster: Cluster, operator: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulingStack]:
    started = time.monotonic()
    directory = tmp_path_factory.mktemp("scheduling")
    with scheduling_on(cluster, directory, PODS_READY_TIMEOUT) as stack:
        # What the schedulers add to the 3-node cluster's start (read with `pytest -s`).
        print(
            f"\nscheduling stack + chart upgrade: {time.monotonic() - started:.1f}s",
            file=sys.stderr,
        )
        yield stack


def spread_job(name: str, *, hold_s: int = 3, labels: dict[str, str] | None = None) -> dict:
    """A barrier job of 3 workers, one per node (required anti-affinity on its name)."""
    term = {"labelSelector": {"matchLabels": {JOB_LABEL: name}}, "topologyKey": HOSTNAME}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return barrier_job(
        name,
        3,
        PER_WORKER_MILLICPU,
        hold_s=hold_s,
        labels=labels,
        template_spec={"affinity": affinity},
    )


def _apply(cluster: Cluster, ns: str, job: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(job))


def _job(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    return dict(get_json(cluster, "-n", ns, "tfjob", name))


def _succeeded_across_the_nodes(cluster: Cluster, ns: str, name: str) -> list[dict[str, Any]]:
    job = wait_finished(cluster, ns, name, timeout=240)
    assert (condition(job, "Succeeded") or {}).get("status") == "True", job["status"]
    pods = job_pods(cluster, ns, name)
    assert sorted(p["spec"].get("nodeName") for p in pods) == NODES, [p["spec"] for p in pods]
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    return pods


def test_a_gang_of_three_waits_whole_while_a_node_is_cordoned_and_runs_across_all_three(
    cluster: Cluster, gangs: SchedulingStack, ns: str
) -> None:
    cluster.kubectl("cordon", NODES[2])
    try:
        _apply(cluster, ns, spread_job("gang"))
        waiting = wait_job_condition(
            cluster, ns, "gang", "Running", "the job waiting for its gang", reason="WaitingForGang"
        )
        assert waiting["status"] == "False", waiting
        assert "waiting for 3 pods to be scheduled together" in waiting["message"], waiting
        # No partial start: two nodes could each hold a worker, yet none is bound.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            pods = job_pods(cluster, ns, "gang")
            assert len(pods) == 3
            bound = [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")]
            assert not bound, f"placed while the gang cannot be whole: {bound}"
            time.sleep(1)
    finally:
        cluster.kubectl("uncordon", NODES[2])
    uncordoned = time.monotonic()
    # Coscheduling (v0.33.5) looks again at a gang it rejected only on a new pod or a change of
    # its PodGroup, not when a node becomes usable (else at the scheduler's flush of pods
    # unschedulable for 5 minutes): TaaS writes the waiting gang's PodGroup again, at most a
    # minute apart, so the gang is placed well before that flush, with nobody touching it.
    wait(
        lambda: all(p["spec"].get("nodeName") for p in job_pods(cluster, ns, "gang")),
        f"the gang placed within {PLACED_AFTER_UNCORDON:.0f}s of the uncordon",
        timeout=PLACED_AFTER_UNCORDON,
        every=1.0,
    )
    print(f"\ngang placed {time.monotonic() - uncordoned:.1f}s after the uncordon", file=sys.stderr)
    group = get_json(cluster, "-n", ns, "podgroup", "gang")
    assert RETRY in (group["metadata"].get("annotations") or {}), group["metadata"]
    _succeeded_across_the_nodes(cluster, ns, "gang")


def test_a_queue_spanning_the_nodes_admits_the_second_job_when_the_first_finishes(
    cluster: Cluster, gangs: SchedulingStack, ns: str
) -> None:
    # Room in the quota for one job's 3 workers (one on each node), not for two jobs'.
    queue, cleanup = kueue_queue(cluster, ns, cpu_milli=PER_WORKER_MILLICPU * 9 // 2)
    try:
        labels = {QUEUE_LABEL: queue}
        _apply(cluster, ns, spread_job("first", hold_s=8, labels=labels))
        wait(
            lambda: len(job_pods(cluster, ns, "first")) == 3,
            "first admitted",
            timeout=120.0,
            every=1.0,
        )
        _apply(cluster, ns, spread_job("second", labels=labels))
        assert_queued_for_quota(cluster, ns, "second")
        first = _succeeded_across_the_nodes(cluster, ns, "first")
        second = _succeeded_across_the_nodes(cluster, ns, "second")
        resumed = condition(_job(cluster, ns, "second"), "Suspended") or {}
        assert (resumed.get("status"), resumed.get("reason")) == ("False", "TFJobResumed")
        ended = max(finished_at(p) or 0 for p in first)
        assert min(scheduled_at(p) or 0 for p in second) >= ended
    finally:
        cluster.kubectl(
            "delete", "tfjob", "-n", ns, "--all", "--wait=true", "--timeout=60s", check=False
        )
        cleanup()


def test_a_queued_job_whose_image_is_missing_is_evicted_after_the_pods_ready_timeout(
    cluster: Cluster, gangs: SchedulingStack, ns: str
) -> None:
    queue, cleanup = kueue_queue(cluster, ns, cpu_milli=PER_WORKER_MILLICPU * 9 // 2)
    try:
        job = spread_job("missing", labels={QUEUE_LABEL: queue})
        container = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        container["image"] = "registry.invalid/taas/not-there:1"  # Never pulled: no network
        _apply(cluster, ns, job)
        wait(
            lambda: len(job_pods(cluster, ns, "missing")) == 3, "its pods", timeout=120.0, every=1.0
        )
        running = wait_job_condition(
            cluster,
            ns,
            "missing",
            "Running",
            "TaaS saying why it does not run",
            reason="ErrImageNeverPull",
        )
        assert running["status"] == "False", running
        evicted = wait_workload_condition(
            cluster,
            ns,
            "missing",
            "Evicted",
            "True",
            "Kueue's eviction",
            timeout=PODS_READY_TIMEOUT + 60,
        )
        assert evicted["reason"] == "PodsReadyTimeout", evicted
        suspended = wait_job_condition(
            cluster, ns, "missing", "Suspended", "the job Suspended", status="True"
        )
        assert suspended["lastTransitionTime"] >= evicted["lastTransitionTime"], suspended
        wait(lambda: not job_pods(cluster, ns, "missing"), "its pods gone", timeout=60, every=1.0)
        requeued = wait(
            lambda: ((workload_of(cluster, ns, "missing") or {}).get("status") or {}).get(
                "requeueState"
            ),
            "Kueue's requeue",
            timeout=120.0,
            every=1.0,
        )
        assert requeued.get("count") == 1, requeued
        events = get_json(
            cluster, "events", "-n", ns, "--field-selector", "involvedObject.name=missing"
        )
        assert any(
            e.get("reason") == "Stopped"
            and "Exceeded the PodsReady timeout" in e.get("message", "")
            for e in events["items"]
        ), [(e.get("reason"), e.get("message")) for e in events["items"]]
    finally:
        cluster.kubectl(
            "delete", "tfjob", "-n", ns, "--all", "--wait=true", "--timeout=60s", check=False
        )
        cleanup()
