"""(f) Node loss on the simulated cluster: a node stops heart-beating (kwok lets go of it, as a
machine that lost power). Kubernetes marks it NotReady (10 s, shortened timings) and evicts its
pods once their toleration runs out (2 s, set on the template); nothing confirms they stopped.
TaaS force-deletes them past their grace period (3 s on the template) and:
- restartPolicy OnFailure: recreates the lost replicas on healthy nodes, Running again, the
  event naming the lost node, each replica one pod at a time (same name, new uid);
- restartPolicy Never: the job fails, its message naming the node.
Nodes deleted instead: the pod garbage collector marks their pods and removes them (after its
40 s quarantine); TaaS makes the lost replicas again on the other nodes (OnFailure), or fails
the job naming the node (Never).
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest
from kubernetes import client

from tests.harness.waiting import wait
from tests.sim.sim_helpers import (
    condition,
    create_namespace,
    create_tfjob,
    pods,
    sim_tfjob,
    tfjobs,
)

pytestmark = [pytest.mark.sim, pytest.mark.controlplane, pytest.mark.timeout(600)]

TOLERATION_S, GRACE_S = 2, 3


def _lossy(name: str, restart_policy: str) -> dict[str, Any]:
    manifest = sim_tfjob(name, ps=1, workers=6, restart_policy=restart_policy)
    for spec in manifest["spec"]["tfReplicaSpecs"].values():
        pod_spec = spec["template"]["spec"]
        pod_spec["terminationGracePeriodSeconds"] = GRACE_S
        pod_spec["tolerations"] = [
            {
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": TOLERATION_S,
            }
            for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
        ]
    return manifest


def _node_ready(sim, node: str) -> bool:
    return node in sim.ready_nodes()


def _running_again(sim, ns: str, name: str, lost: list[str]) -> str:
    """Wait for the job Running again with each lost replica made again once (NodeLost); the
    messages of its events."""
    job = wait(
        lambda: condition(tfjobs(sim.api, ns)[name], "Running") and tfjobs(sim.api, ns)[name],
        f"{name} Running again",
        timeout=60,
        every=0.5,
    )
    recreations = job["status"]["recreations"]
    assert sorted(recreations) == lost
    assert all(r["count"] == 1 and r["lastReason"] == "NodeLost" for r in recreations.values())
    selector = f"involvedObject.name={name}"
    return str(
        sim.kubectl(
            "get", "events", "-n", ns, "--field-selector", selector,
            "-o", "jsonpath={.items[*].message}",
        ).stdout
    )  # fmt: skip


def test_f_lost_node_replicas_replaced_with_on_failure_and_job_failed_with_never(sim, operator):
    ns = f"sim-f-{uuid.uuid4().hex[:6]}"
    create_namespace(sim.api, ns)
    create_tfjob(sim.api, ns, _lossy("resilient", "OnFailure"))
    create_tfjob(sim.api, ns, _lossy("fragile", "Never"))
    for job in ("resilient", "fragile"):
        wait(
            lambda job=job: condition(tfjobs(sim.api, ns)[job], "Running"),
            job,
            timeout=60,
            every=0.5,
        )
    placed = {p.metadata.name: p for p in pods(sim.api, ns)}
    lost_nodes = {placed["resilient-ps-0"].spec.node_name, placed["fragile-ps-0"].spec.node_name}
    lost = {n: p.metadata.uid for n, p in placed.items() if p.spec.node_name in lost_nodes}
    resilient_lost = sorted(n for n in lost if n.startswith("resilient-"))
    try:
        for node in lost_nodes:
            sim.stop_heartbeat(node)
        stopped = time.monotonic()
        wait(
            lambda: not any(_node_ready(sim, n) for n in lost_nodes),
            "the nodes NotReady",
            timeout=60,
            every=0.5,
        )
        not_ready = time.monotonic()

        def replaced() -> list[str]:
            now = {p.metadata.name: p for p in pods(sim.api, ns, "resilient")}
            return [
                n
                for n in resilient_lost
                if n in now
                and now[n].metadata.uid != lost[n]
                and now[n].status.phase == "Running"
                and now[n].spec.node_name not in lost_nodes
                and now[n].metadata.deletion_timestamp is None
            ]

        wait(
            lambda: replaced() == resilient_lost,
            f"{resilient_lost} replaced",
            timeout=90,
            every=0.5,
        )
        back = time.monotonic()
        events = _running_again(sim, ns, "resilient", resilient_lost)
        assert any(
            f"on node {n}, evicted after the node stopped responding" in events for n in lost_nodes
        ), events

        failed = wait(
            lambda: condition(tfjobs(sim.api, ns)["fragile"], "Failed"),
            "fragile Failed",
            timeout=60,
            every=0.5,
        )
        named = re.search(
            r"\(pod (\S+) \(\w+ \d+\) on node (\S+), evicted after", failed["message"]
        )
        assert named is not None, failed["message"]
        assert named[2] in lost_nodes and placed[named[1]].spec.node_name == named[2]
        print(
            f"\n(f) {len(resilient_lost)} replicas on {sorted(lost_nodes)}: NotReady "
            f"{not_ready - stopped:.1f}s after the last heartbeat stopped, replaced and Running "
            f"{back - not_ready:.1f}s after NotReady (toleration {TOLERATION_S}s + grace "
            f"{GRACE_S}s included)"
        )
    finally:
        for node in lost_nodes:
            sim.resume_heartbeat(node)
        wait(
            lambda: all(_node_ready(sim, n) for n in lost_nodes),
            "the nodes back",
            timeout=60,
            every=0.5,
        )


def test_f_deleted_node_replicas_replaced_with_on_failure_and_job_failed_with_never(sim, operator):
    """Nodes deleted (machines removed from the cluster): the pod garbage collector marks their
    pods Failed (DisruptionTarget, DeletionByPodGC) and deletes them after its 40 s
    quarantine. TaaS tells that from a container failure, and from a pod merely missing:
    with OnFailure the lost replicas run again elsewhere and the event names the node; with
    Never the job fails naming the node and nothing is made again."""
    ns = f"sim-fd-{uuid.uuid4().hex[:6]}"
    create_namespace(sim.api, ns)
    create_tfjob(sim.api, ns, sim_tfjob("survivor", ps=1, workers=6, restart_policy="OnFailure"))
    create_tfjob(sim.api, ns, sim_tfjob("doomed", ps=1, workers=6, restart_policy="Never"))
    for job in ("survivor", "doomed"):
        wait(
            lambda job=job: condition(tfjobs(sim.api, ns)[job], "Running"),
            job,
            timeout=60,
            every=0.5,
        )
    placed = {p.metadata.name: p for p in pods(sim.api, ns)}
    gone_nodes = {placed["survivor-ps-0"].spec.node_name, placed["doomed-ps-0"].spec.node_name}
    lost = {n: p.metadata.uid for n, p in placed.items() if p.spec.node_name in gone_nodes}
    survivor_lost = sorted(n for n in lost if n.startswith("survivor-"))
    try:
        for node in gone_nodes:
            sim.delete_node(node)
        deleted = time.monotonic()

        def replaced() -> list[str]:
            now = {p.metadata.name: p for p in pods(sim.api, ns, "survivor")}
            return [
                n
                for n in survivor_lost
                if n in now
                and now[n].metadata.uid != lost[n]
                and now[n].status.phase == "Running"
                and now[n].spec.node_name not in gone_nodes
            ]

        wait(
            lambda: replaced() == survivor_lost, f"{survivor_lost} replaced", timeout=150, every=0.5
        )
        print(
            f"\n(f) nodes {sorted(gone_nodes)} deleted: {len(survivor_lost)} replica(s) Running "
            f"elsewhere after {time.monotonic() - deleted:.1f}s"
        )
        events = _running_again(sim, ns, "survivor", survivor_lost)
        assert any(
            f"on node {n}, which was deleted from the cluster" in events for n in gone_nodes
        ), events
        assert "exit code" not in events  # a lost node, not a failed container

        failed = wait(
            lambda: condition(tfjobs(sim.api, ns)["doomed"], "Failed"),
            "doomed Failed",
            timeout=60,
            every=0.5,
        )
        named = re.search(
            r"\(pod (\S+) \(\w+ \d+\) on node (\S+), which was deleted from the cluster\)",
            failed["message"],
        )
        assert named is not None, failed["message"]
        assert named[2] in gone_nodes and placed[named[1]].spec.node_name == named[2]
        doomed = tfjobs(sim.api, ns)["doomed"]["status"]
        assert not doomed.get("recreations"), doomed  # nothing made again
    finally:
        present = {n.metadata.name for n in client.CoreV1Api(sim.api).list_node().items}
        for node in gone_nodes - present:
            sim.restore_node(node)
        wait(
            lambda: all(_node_ready(sim, n) for n in gone_nodes),
            "the nodes back",
            timeout=60,
            every=0.5,
        )
