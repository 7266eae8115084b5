"""Scenario (f): nodes stop heart-beating under a running TFJob; how soon its lost replicas run
again elsewhere.

    measure_node_loss(stage, scenario, result)      # fills `result` (bench.scale.results)

1. one TFJob (restartPolicy OnFailure; its pods tolerate the unreachable taint 2 s and have a
   3 s grace period) is applied; wait until every pod is Running and the job says Running;
2. `lost_nodes` nodes stop heart-beating together (`SimCluster.stop_heartbeat`: kwok lets go of
   them, as power or network loss): the node of PS 0 first, then workers' nodes;
3. silent -> NotReady: when the node lifecycle controller has marked every one of them (their
   Ready condition no longer True), as read from the nodes; NotReady -> evicted: when the last
   lost pod was evicted (its deletion asked by the taint-eviction controller: Kubernetes taints
   the nodes of a zone at --node-eviction-rate, 0.1 nodes/s by default, then the pods'
   toleration runs);
4. replaced: every lost replica has a new pod (same name, another uid) Running on another
   node, not being deleted; per replica, from its old pod's eviction to its new pod Running
   (the largest is the figure held to 15 s: what the controller and the cluster take once
   Kubernetes has given the pod up); NotReady -> job Running: when the TFJob's Running
   condition is True again after having turned False (or it never turned False);
5. duplicates: replicas of which two pods were Running at once, neither being deleted (from
   the clock's records); stuck: what still holds a lost replica after `timeout_s`.
Not run for the floor: it creates objects once and has no notion of a lost replica.
"""

from __future__ import annotations

import time
from collections import defaultdict
from itertools import pairwise

from bench.harness.clock import JobTimes, PodTimes
from bench.scale.results import ScaleResult
from bench.scale.scenarios import Scenario, tfjob_manifest
from bench.scale.stage import JSON, NAMESPACE, Stage
from taas_operator.api.resources import TFJOB


def _ready(node: object) -> bool:
    if not isinstance(node, dict):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _live(pods: dict[str, PodTimes], job: str) -> dict[str, PodTimes]:
    """name -> the pod of that name Running now (not ended, not being deleted)."""
    return {
        p.name: p
        for p in pods.values()
        if p.job == job and p.running is not None and not (p.ended or p.deleting or p.gone)
    }


def duplicates(pods: dict[str, PodTimes], job: str) -> int:
    """Replicas with two pods Running at once, neither being deleted."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    now = time.monotonic()
    for pod in pods.values():
        if pod.job != job or pod.running is None:
            continue
        ends = [t for t in (pod.ended, pod.deleting, pod.gone) if t is not None]
        spans[pod.name].append((pod.running, min(ends) if ends else now))
    overlapping = 0
    for intervals in spans.values():
        intervals.sort()
        if any(b[0] < a[1] for a, b in pairwise(intervals)):
            overlapping += 1
    return overlapping


def _chosen_nodes(live: dict[str, PodTimes], count: int) -> list[str]:
    """The node of PS 0 first, then the nodes of the workers in index order."""
    order = sorted(live.values(), key=lambda p: (p.replica_type.lower() != "ps", p.name))
    nodes: list[str] = []
    for pod in order:
        if pod.node and pod.node not in nodes:
            nodes.append(pod.node)
        if len(nodes) == count:
            break
    return nodes


def measure_node_loss(stage: Stage, scenario: Scenario, result: ScaleResult) -> None:
    clock, sim = stage.clock, stage.sim
    job = scenario.job_names()[0]
    status, answer = clock.request(
        "POST", TFJOB.path(NAMESPACE), tfjob_manifest(job, NAMESPACE, scenario), JSON
    )
    if status >= 300:
        raise RuntimeError(f"TFJob refused: HTTP {status}: {answer}")

    def running(pods: dict[str, PodTimes], jobs: dict[str, JobTimes]) -> float | None:
        ready = len(_live(pods, job)) >= scenario.pods and jobs.get(job, JobTimes()).running
        return time.monotonic() if ready else None

    if stage.wait(lambda: clock.view(running), 600.0, "the job Running") is None:
        raise RuntimeError("the node-loss job never ran")
    live = clock.view(lambda pods, _: _live(pods, job))
    nodes = _chosen_nodes(live, scenario.lost_nodes)
    lost = {p.name: p.uid for p in live.values() if p.node in nodes}
    result.lost_replicas = len(lost)
    for node in nodes:
        sim.stop_heartbeat(node)
    silent = time.monotonic()

    def all_not_ready() -> float | None:
        answers = clock.requests([("GET", f"/api/v1/nodes/{n}", None, JSON) for n in nodes])
        return time.monotonic() if not any(_ready(a) for _, a in answers) else None

    not_ready = stage.wait(all_not_ready, 120.0, "the silent nodes NotReady")
    if not_ready is None:
        raise RuntimeError(f"nodes {nodes} never turned NotReady")
    result.silent_to_not_ready_s = not_ready - silent

    def replaced(pods: dict[str, PodTimes], _: dict[str, JobTimes]) -> float | None:
        now_live = _live(pods, job)
        back = {
            name: now_live[name]
            for name, uid in lost.items()
            if name in now_live and now_live[name].uid != uid and now_live[name].node not in nodes
        }
        result.replaced = len(back)
        evicted = [pods[uid].deleting for uid in lost.values()]
        if all(evicted):
            last = max(t for t in evicted if t is not None)
            result.not_ready_to_evicted_s = last - not_ready
        if len(back) < len(lost):
            return None
        waits = [
            running - old.deleting
            for name, new in back.items()
            if (running := new.running) is not None and (old := pods[lost[name]]).deleting
        ]
        result.evicted_to_replaced_max_s = max(waits, default=None)
        return max(p.running for p in back.values() if p.running is not None)

    back = stage.wait(lambda: clock.view(replaced), scenario.timeout_s, "the lost replicas back")
    if back is not None:
        result.not_ready_to_replaced_s = back - not_ready

        def job_running(_: dict[str, PodTimes], jobs: dict[str, JobTimes]) -> float | None:
            record = jobs.get(job, JobTimes())
            changes = [c for c in record.running_changes if c[0] >= silent]
            if not changes:
                return not_ready if record.running else None  # it never left Running
            return changes[-1][0] if changes[-1][1] else None

        again = stage.wait(lambda: clock.view(job_running), scenario.timeout_s, "the job Running")
        if again is not None:
            result.not_ready_to_job_running_s = max(0.0, again - not_ready)
    else:
        held = clock.view(
            lambda pods, _: sorted(
                f"{p.name} ({'Terminating' if p.deleting else p.phase} on {p.node})"
                for uid, p in pods.items()
                if uid in lost.values() and p.gone is None
            )
        )
        result.stuck = (
            f"{len(lost) - result.replaced} of {len(lost)} lost replicas not back after "
            f"{scenario.timeout_s:.0f}s; old pods still there: {', '.join(held[:3]) or 'none'}"
            + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        )
    result.duplicates = clock.view(lambda pods, _: duplicates(pods, job))
