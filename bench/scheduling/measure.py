"""What one gang run measured, read back from the objects the cluster kept (`cleanPodPolicy:
None`: every pod stays), with the apiserver's one-second timestamps.

    result = GangResult(shape=shape)
    measure_jobs(api, jobs, result, workdir)   # jobs: (index, queue, workers) as created

Per job: created -> admitted (its Workload's Admitted condition), admitted -> the operator made
its last pod, that pod made -> the last pod placed (coscheduling), admitted -> every pod of the
gang Running (the last container start), created -> Succeeded. Per queue, independently of
Kueue: the most GPUs its pods held at any instant (from each pod's PodScheduled time to its
container's end, to the whole second; one GPU per pod). A pod never placed or never ended is a
problem; every interval goes to `<workdir>/pods.json`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client
from pydantic import BaseModel

from bench.scheduling.shape import GangShape

KUEUE = ("kueue.x-k8s.io", "v1beta2")
JOB_LABEL = "training.kubeflow.org/job-name"


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

    def percentiles(self, attr: str) -> tuple[float, float, float]:
        values = sorted(getattr(j, attr) for j in self.jobs)
        if not values:
            return (0.0, 0.0, 0.0)
        p99 = values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]
        return statistics.median(values), p99, values[-1]


def job_name(index: int) -> str:
    return f"gang-{index:03d}"


def measure_jobs(
    api: client.ApiClient, jobs: list[tuple[int, int, int]], result: GangResult, workdir: Path
) -> None:
    """Fill `result.jobs` and `result.peak_held` (problems for pods never placed or ended)."""
    custom: Any = client.CustomObjectsApi(api)
    core: Any = client.CoreV1Api(api)
    queues = result.shape.queues
    bodies: dict[str, dict[str, Any]] = {}
    workloads: dict[str, dict[str, Any]] = {}
    pods_of: dict[str, list[Any]] = {}
    for queue in range(queues):
        ns = GangShape.namespace(queue)
        tfjobs = custom.list_namespaced_custom_object("kubeflow.org", "v1", ns, "tfjobs")
        bodies.update({job["metadata"]["name"]: job for job in tfjobs["items"]})
        for item in custom.list_namespaced_custom_object(*KUEUE, ns, "workloads")["items"]:
            for owner in item["metadata"].get("ownerReferences") or []:
                workloads[owner["name"]] = item
        for pod in core.list_namespaced_pod(ns, label_selector=JOB_LABEL).items:
            pods_of.setdefault(pod.metadata.labels[JOB_LABEL], []).append(pod)
    held: dict[int, list[tuple[float, int]]] = {q: [] for q in range(queues)}
    intervals: list[dict[str, Any]] = []
    for index, queue, workers in jobs:
        name, ns = job_name(index), GangShape.namespace(queue)
        job = bodies.get(name) or {}
        admitted = _condition_time(workloads.get(name), "Admitted")
        succeeded = _condition_time(job, "Succeeded")
        pods = pods_of.get(name, [])
        starts = [_started(p) for p in pods]
        if admitted is None or succeeded is None or len(pods) != workers or None in starts:
            continue  # not finished: counted in problems already
        created = _time(job["metadata"]["creationTimestamp"])
        last_start = max(s for s in starts if s is not None)
        made = max(_time(p.metadata.creation_timestamp) for p in pods)
        placed = max((_scheduled(p) or made) for p in pods)
        result.jobs.append(
            JobTimes(
                name=name,
                queue=queue,
                workers=workers,
                admit_s=admitted - created,
                create_s=max(0.0, made - admitted),
                place_s=max(0.0, placed - made),
                start_s=max(0.0, last_start - admitted),
                total_s=succeeded - created,
            )
        )
        for pod in pods:
            scheduled, ended = _scheduled(pod), _ended(pod)
            if scheduled is None or ended is None or not pod.spec.node_name:
                result.problems.append(f"{ns}/{pod.metadata.name} never placed or never ended")
                continue
            held[queue] += [(scheduled, 1), (ended, -1)]
            intervals.append(
                {"queue": queue, "pod": pod.metadata.name, "placed": scheduled, "ended": ended}
            )
    (workdir / "pods.json").write_text(json.dumps(intervals))
    for queue, changes in held.items():
        level = peak = 0
        for _, delta in sorted(changes, key=lambda c: (c[0], c[1])):  # ends first on a tie
            level += delta
            peak = max(peak, level)
        result.peak_held[queue] = peak


def _time(value: Any) -> float:
    """Seconds since the epoch, to the whole second: the apiserver's conditions have no finer
    resolution, and mixing kwok's sub-second container times with them would order a pod's end
    after a later pod's start within the same second."""
    if not isinstance(value, datetime):
        value = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return float(int(value.timestamp()))


def _condition_time(obj: dict[str, Any] | None, type_: str) -> float | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_ and cond["status"] == "True":
            return _time(cond["lastTransitionTime"])
    return None


def _started(pod: Any) -> float | None:
    for status in pod.status.container_statuses or []:
        state = status.state
        moment = (state.running and state.running.started_at) or (
            state.terminated and state.terminated.started_at
        )
        if moment:
            return _time(moment)
    return None


def _ended(pod: Any) -> float | None:
    for status in pod.status.container_statuses or []:
        if status.state.terminated and status.state.terminated.finished_at:
            return _time(status.state.terminated.finished_at)
    return None


def _scheduled(pod: Any) -> float | None:
    for cond in pod.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "True":
            return _time(cond.last_transition_time)
    return None
