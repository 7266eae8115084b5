"""What one gang run measured: the TFJobs and Kueue Workloads the cluster kept, with the
apiserver's one-second timestamps, and every pod as a watch saw it change (with its own stamps:
created, bound to a node).

    result = GangResult(shape=shape)
    measure_jobs(api, jobs, pods, result, workdir)   # jobs: (index, queue, workers) as created
                                                     # pods: the Clock's records, every namespace

Per job: created -> admitted (its Workload's Admitted condition), admitted -> the operator made
its last pod, that pod made -> the last pod placed (coscheduling), admitted -> every pod of the
gang Running (the last one seen Running by the watch), created -> Succeeded. Per queue,
independently of Kueue: the most GPUs its pods held at any instant (one GPU per pod; a pod
holds its GPU from the watch event that shows it bound to a node to the one that shows it
Succeeded, Failed or gone). One watch delivers every pod's changes in the apiserver's order, so
the count at each event is the count the scheduler and Kueue saw then. The pods' own
`finishedAt` is not used: kwok, behind on its events under load, plays a stage again on an old
copy of a pod that has already ended, and writes a later `finishedAt` over the real one. A pod
never placed, never ended, or running again after it ended is a problem; every interval (epoch
seconds) goes to `<workdir>/pods.json`.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client
from pydantic import BaseModel

from bench.harness.clock import PodTimes
from bench.scheduling.shape import GangShape

KUEUE = ("kueue.x-k8s.io", "v1beta2")


class JobTimes(BaseModel):
    name: str
    queue: int
    workers: int
    admit_s: float  # created -> Kueue admitted its Workload
    create_s: float  # admitted -> the operator made the last of its pods
    place_s: float  # the last pod made -> the last pod placed (coscheduling bound the gang)
    start_s: float  # admitted -> the last of its pods running (the gang started)
    total_s: float  # created -> Succeeded


@dataclass
class GangResult:
    shape: GangShape
    jobs: list[JobTimes] = field(default_factory=list)
    makespan_s: float = 0.0  # first create -> last job Succeeded (wall clock)
    peak_admitted: dict[int, int] = field(default_factory=dict)  # queue -> GPUs, Kueue's view
    peak_held: dict[int, int] = field(default_factory=dict)  # queue -> GPUs held by pods
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth knowing, not wrong

    def percentiles(self, attr: str) -> tuple[float, float, float]:
        values = sorted(getattr(j, attr) for j in self.jobs)
        if not values:
            return (0.0, 0.0, 0.0)
        p99 = values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]
        return statistics.median(values), p99, values[-1]


def job_name(index: int) -> str:
    return f"gang-{index:03d}"


def measure_jobs(
    api: client.ApiClient,
    jobs: list[tuple[int, int, int]],
    pods: dict[str, PodTimes],
    result: GangResult,
    workdir: Path,
) -> None:
    """Fill `result.jobs` and `result.peak_held` (problems for pods never placed or ended, or
    seen running again after they ended)."""
    custom: Any = client.CustomObjectsApi(api)
    to_epoch = time.time() - time.monotonic()  # the watch's monotonic times, as epoch seconds
    bodies: dict[str, dict[str, Any]] = {}
    workloads: dict[str, dict[str, Any]] = {}
    for queue in range(result.shape.queues):
        ns = GangShape.namespace(queue)
        tfjobs = custom.list_namespaced_custom_object("kubeflow.org", "v1", ns, "tfjobs")
        bodies.update({job["metadata"]["name"]: job for job in tfjobs["items"]})
        for item in custom.list_namespaced_custom_object(*KUEUE, ns, "workloads")["items"]:
            for owner in item["metadata"].get("ownerReferences") or []:
                workloads[owner["name"]] = item
    pods_of: dict[str, list[PodTimes]] = {}
    for pod in pods.values():
        pods_of.setdefault(pod.job, []).append(pod)
    queue_of = {GangShape.namespace(queue): queue for queue in range(result.shape.queues)}
    for index, queue, workers in jobs:
        name = job_name(index)
        job = bodies.get(name) or {}
        admitted = _condition_time(workloads.get(name), "Admitted")
        succeeded = _condition_time(job, "Succeeded")
        mine = pods_of.get(name, [])
        if admitted is None or succeeded is None or len(mine) != workers:
            continue  # not finished: counted in problems already
        if any(p.running is None or p.created_stamp is None for p in mine):
            continue
        created = _time(job["metadata"]["creationTimestamp"])
        made = max(p.created_stamp or 0.0 for p in mine)
        placed = max(p.scheduled_stamp or made for p in mine)
        last_running = max((p.running or 0.0) for p in mine) + to_epoch
        result.jobs.append(
            JobTimes(
                name=name,
                queue=queue,
                workers=workers,
                admit_s=admitted - created,
                create_s=max(0.0, made - admitted),
                place_s=max(0.0, placed - made),
                start_s=max(0.0, last_running - admitted),
                total_s=succeeded - created,
            )
        )
    held = pods_held(pods.values(), queue_of)
    result.peak_held = held.peaks
    result.problems += held.problems
    intervals = [
        {**interval, "placed": round(interval["placed"] + to_epoch, 3),
         "ended": round(interval["ended"] + to_epoch, 3)}
        for interval in held.intervals
    ]  # fmt: skip
    (workdir / "pods.json").write_text(json.dumps(intervals))


@dataclass
class Held:
    """Per queue, the most pods bound to nodes and not ended at any one watch event."""

    peaks: dict[int, int]
    intervals: list[dict[str, Any]]  # queue, pod, node, placed, ended (the watch's times)
    problems: list[str]


def pods_held(pods: Iterable[PodTimes], queue_of: dict[str, int]) -> Held:
    """Count, from the watch's records, the pods (one GPU each) each queue held at once: from
    the event showing a pod bound to a node to the one showing it ended (or gone); pods of
    other namespaces are not counted."""
    changes: dict[int, list[tuple[float, int]]] = {queue: [] for queue in queue_of.values()}
    held = Held(peaks={}, intervals=[], problems=[])
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        queue = queue_of.get(pod.namespace)
        if queue is None:
            continue
        ended = pod.ended if pod.ended is not None else pod.gone
        where = f"{pod.namespace}/{pod.name}"
        if pod.scheduled is None or ended is None:
            held.problems.append(f"{where} never placed or never ended")
            continue
        if pod.reopened is not None:
            held.problems.append(f"{where} was seen running again after it ended")
        changes[queue] += [(pod.scheduled, 1), (ended, -1)]
        held.intervals.append(
            {"queue": queue, "pod": pod.name, "node": pod.node, "placed": pod.scheduled,
             "ended": ended}
        )  # fmt: skip
    for queue, moments in changes.items():
        level = peak = 0
        for _, delta in sorted(moments):  # an end (-1) before a start at the same moment
            level += delta
            peak = max(peak, level)
        held.peaks[queue] = peak
    return held


def _time(value: Any) -> float:
    """An apiserver timestamp (RFC 3339, whole seconds) as seconds since the epoch."""
    if not isinstance(value, datetime):
        value = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return float(int(value.timestamp()))


def _condition_time(obj: dict[str, Any] | None, type_: str) -> float | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_ and cond["status"] == "True":
            return _time(cond["lastTransitionTime"])
    return None
