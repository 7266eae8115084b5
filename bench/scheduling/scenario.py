"""Many gang jobs competing for GPU quotas on a simulated cluster: Kueue admits each whole within
its queue's quota, coscheduling places each whole, TaaS runs them.

    shape = GangShape.full() / GangShape.quick()
    with GangRun(shape, workdir) as run:       # the simulated cluster, schedulers, operator
        result = run.run()                     # creates the jobs, waits, measures, checks
    result.problems                            # [] when every check held

What runs: a `SimCluster` (real etcd, kube-apiserver, kube-scheduler, kube-controller-manager;
kwok plays `shape.nodes` GPU nodes of 8 `nvidia.com/gpu` each), scheduler-plugins' scheduler and
controller and Kueue with its `kubeflow.org/tfjob` integration (`taas_controlplane.scheduling`),
and TaaS's operator (`python -m taas_operator.controller --gang-scheduler-name=scheduler-plugins`,
defaults otherwise). Kueue's objects: one ResourceFlavor `gpu` (node label
`nvidia.com/gpu.present: "true"`), and per queue a ClusterQueue with `shape.quota` GPUs (and CPU
and memory to match) and a LocalQueue in the queue's own namespace. The jobs: `shape.jobs`
TFJobs of Workers only, between `shape.min_workers` and `shape.max_workers` replicas (seeded),
one GPU each, spread over the queues in turn, created at once from 16 threads; every fake
container exits 0 after `shape.run_seconds` (kwok, `sim.taas.dev/run-seconds`);
`successPolicy: AllWorkers` and `cleanPodPolicy: None`, so a job ends when its last pod does and
the pods stay to be measured.

Checks (each failure is a line in `problems`): every job Succeeded within `shape.timeout_s` (no
deadlock); the GPUs Kueue had admitted in each queue never above its quota (its ClusterQueue
status, sampled every second); and, independently of Kueue, the GPUs the pods of each queue
held at any instant (from each pod's PodScheduled time to its container's end, to the whole
second) never above the quota; every pod ran on a node and ended.
Figures per job: created -> admitted (its Workload's Admitted condition), admitted -> the
operator made its last pod, that pod made -> the last pod placed (coscheduling), admitted ->
every pod of the gang Running (the last container start), created -> Succeeded; all with the
apiserver's one-second timestamps.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client
from pydantic import BaseModel

from taas_controlplane.scheduling import SchedulingOptions
from taas_controlplane.sim.annotations import container_plan
from taas_controlplane.sim.cluster import SimCluster
from taas_operator.processes import spawn, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
TAAS_CRD = REPO_ROOT / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"
GPU = "nvidia.com/gpu"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_LABEL = "training.kubeflow.org/job-name"
GPUS_PER_NODE = 8


class GangShape(BaseModel):
    """The size of one run."""

    nodes: int
    jobs: int
    queues: int
    quota: int  # GPUs per queue
    min_workers: int
    max_workers: int
    run_seconds: float
    timeout_s: float
    seed: int = 23

    @classmethod
    def full(cls) -> GangShape:
        """200 jobs of 8-64 workers over 1,000 nodes (8,000 GPUs), 4 queues of 1,500 GPUs."""
        return cls(
            nodes=1000, jobs=200, queues=4, quota=1500, min_workers=8, max_workers=64,
            run_seconds=30, timeout_s=3600,
        )  # fmt: skip

    @classmethod
    def quick(cls) -> GangShape:
        """CI-sized: 12 jobs of 8-16 workers over 10 nodes (80 GPUs), 2 queues of 32 GPUs: about
        three rounds of jobs per queue."""
        return cls(
            nodes=10, jobs=12, queues=2, quota=32, min_workers=8, max_workers=16,
            run_seconds=5, timeout_s=240,
        )  # fmt: skip

    def sizes(self) -> list[int]:
        """Each job's worker count (seeded: the same for every run of a shape)."""
        pick = random.Random(self.seed)
        return [pick.randint(self.min_workers, self.max_workers) for _ in range(self.jobs)]


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


def _time(value: Any) -> float:
    """Seconds since the epoch, to the whole second: the apiserver's conditions have no finer
    resolution, and mixing kwok's sub-second container times with them would order a pod's end
    after a later pod's start within the same second."""
    if not isinstance(value, datetime):
        value = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return float(int(value.timestamp()))


def _namespace(queue: int) -> str:
    return f"gang-team-{queue}"


class _UsageSampler:
    """Samples each ClusterQueue's admitted GPUs (Kueue's own accounting) every second."""

    def __init__(self, api: client.ApiClient, queues: int) -> None:
        self.api, self.queues = api, queues
        self.peak: dict[int, int] = dict.fromkeys(range(queues), 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> _UsageSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        custom: Any = client.CustomObjectsApi(self.api)
        while not self._stop.wait(1.0):
            for queue in range(self.queues):
                try:
                    cq = custom.get_cluster_custom_object(*KUEUE, "clusterqueues", f"gang-{queue}")
                except client.ApiException:
                    continue
                for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
                    for resource in flavor.get("resources") or []:
                        if resource["name"] == GPU:
                            used = int(str(resource.get("total", "0")))
                            self.peak[queue] = max(self.peak[queue], used)


class GangRun:
    """One run: the simulated cluster with both schedulers, the operator, the jobs."""

    def __init__(self, shape: GangShape, workdir: Path) -> None:
        self.shape, self.workdir = shape, workdir
        options = SchedulingOptions(coscheduling=True, kueue=True, job_crds=[TAAS_CRD])
        self.sim = SimCluster(
            nodes=shape.nodes, gpu_nodes=shape.nodes, directory=workdir / "sim", scheduling=options
        )
        self.operator: Any = None

    def __enter__(self) -> GangRun:
        self.sim.start(timeout=600)
        try:
            self._queues()
            kubeconfig = self.sim.plane.kubeconfig_for("taas-operator", ["system:masters"])
            log = (self.workdir / "operator.log").open("ab")
            self.operator = spawn(
                [
                    sys.executable, "-m", "taas_operator.controller", "--all-namespaces",
                    "--kubeconfig", kubeconfig, "--gang-scheduler-name=scheduler-plugins",
                    "--health-port=0", "--metrics-port=0",
                ],
                cwd=REPO_ROOT, stdout=log,
            )  # fmt: skip
            log.close()
        except BaseException:
            self.sim.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.operator is not None:
            stop(self.operator)
        self.sim.stop()

    # -- set-up -----------------------------------------------------------------------------
    def _queues(self) -> None:
        custom: Any = client.CustomObjectsApi(self.sim.api)
        core: Any = client.CoreV1Api(self.sim.api)

        def kueue(kind: str, name: str, **fields: Any) -> dict[str, Any]:
            meta = {"name": name}
            return {"apiVersion": "/".join(KUEUE), "kind": kind, "metadata": meta, **fields}

        flavor = kueue("ResourceFlavor", "gpu", spec={"nodeLabels": {f"{GPU}.present": "true"}})
        custom.create_cluster_custom_object(*KUEUE, "resourceflavors", flavor)
        quota = self.shape.quota
        resources = [
            {"name": "cpu", "nominalQuota": quota},
            {"name": "memory", "nominalQuota": f"{quota}Gi"},
            {"name": GPU, "nominalQuota": quota},
        ]
        for queue in range(self.shape.queues):
            spec = {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", GPU],
                        "flavors": [{"name": "gpu", "resources": resources}],
                    }
                ],
            }
            custom.create_cluster_custom_object(
                *KUEUE, "clusterqueues", kueue("ClusterQueue", f"gang-{queue}", spec=spec)
            )
            ns = _namespace(queue)
            core.create_namespace({"metadata": {"name": ns}})
            local = kueue("LocalQueue", "team", spec={"clusterQueue": f"gang-{queue}"})
            local["metadata"]["namespace"] = ns
            custom.create_namespaced_custom_object(*KUEUE, ns, "localqueues", local)

    def job_manifest(self, index: int, workers: int) -> dict[str, Any]:
        one_gpu = {"cpu": "1", "memory": "1Gi", GPU: "1"}
        container = {
            "name": "tensorflow",
            "image": "example.com/trainer:1",
            "resources": {"requests": one_gpu, "limits": one_gpu},
        }
        plan = container_plan(exit_code=0, run_seconds=self.shape.run_seconds)
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": f"gang-{index:03d}", "labels": {QUEUE_LABEL: "team"}},
            "spec": {
                "successPolicy": "AllWorkers",
                "runPolicy": {"cleanPodPolicy": "None"},
                "tfReplicaSpecs": {
                    "Worker": {
                        "replicas": workers,
                        "restartPolicy": "Never",
                        "template": {
                            "metadata": {"annotations": plan},
                            "spec": {"containers": [container]},
                        },
                    }
                },
            },
        }

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> GangResult:
        shape, result = self.shape, GangResult(shape=self.shape)
        custom = client.CustomObjectsApi(self.sim.api)
        sizes = shape.sizes()
        too_big = [s for s in sizes if s > shape.quota]
        if too_big:
            result.problems.append(f"jobs of {too_big} GPUs can never fit a {shape.quota} quota")
            return result
        jobs = [(i, i % shape.queues, workers) for i, workers in enumerate(sizes)]
        started = time.time()
        with _UsageSampler(self.sim.api, shape.queues) as sampler, ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda job: custom.create_namespaced_custom_object(
                        "kubeflow.org", "v1", _namespace(job[1]), "tfjobs",
                        self.job_manifest(job[0], job[2]),
                    ),
                    jobs,
                )
            )  # fmt: skip
            finished = self._wait_finished(shape)
            result.peak_admitted = dict(sampler.peak)
        result.makespan_s = time.time() - started
        if finished:
            result.problems.append(f"not Succeeded after {shape.timeout_s:.0f}s: {finished}")
        self._measure(jobs, result)
        for queue, peak in {**result.peak_admitted}.items():
            if peak > shape.quota:
                result.problems.append(f"queue {queue}: Kueue admitted {peak} GPUs > {shape.quota}")
        for queue, peak in result.peak_held.items():
            if peak > shape.quota:
                result.problems.append(f"queue {queue}: pods held {peak} GPUs > {shape.quota}")
        return result

    def _jobs(self) -> dict[str, dict[str, Any]]:
        custom: Any = client.CustomObjectsApi(self.sim.api)
        found: dict[str, dict[str, Any]] = {}
        for queue in range(self.shape.queues):
            items = custom.list_namespaced_custom_object(
                "kubeflow.org", "v1", _namespace(queue), "tfjobs"
            )["items"]
            found.update({item["metadata"]["name"]: item for item in items})
        return found

    def _wait_finished(self, shape: GangShape) -> list[str]:
        """Wait until every job Succeeded (or one failed); the ones still not Succeeded."""
        deadline = time.monotonic() + shape.timeout_s
        while True:
            jobs = self._jobs()
            states = {name: _state(job) for name, job in jobs.items()}
            pending = sorted(n for n, s in states.items() if s != "Succeeded")
            failed = [n for n, s in states.items() if s == "Failed"]
            if failed or (not pending and len(jobs) == shape.jobs):
                return failed
            if time.monotonic() > deadline or self.sim.exited():
                return pending
            time.sleep(2.0)

    def _measure(self, jobs: list[tuple[int, int, int]], result: GangResult) -> None:
        custom: Any = client.CustomObjectsApi(self.sim.api)
        core: Any = client.CoreV1Api(self.sim.api)
        bodies = self._jobs()
        held: dict[int, list[tuple[float, int]]] = {q: [] for q in range(self.shape.queues)}
        intervals: list[dict[str, Any]] = []
        for index, queue, workers in jobs:
            name, ns = f"gang-{index:03d}", _namespace(queue)
            job = bodies.get(name) or {}
            workload = _workload(custom, ns, name)
            admitted = _condition_time(workload, "Admitted")
            succeeded = _condition_time(job, "Succeeded")
            pods = core.list_namespaced_pod(ns, label_selector=f"{JOB_LABEL}={name}").items
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
        (self.workdir / "pods.json").write_text(json.dumps(intervals))
        for queue, changes in held.items():
            level = peak = 0
            for _, delta in sorted(changes, key=lambda c: (c[0], c[1])):  # ends first on a tie
                level += delta
                peak = max(peak, level)
            result.peak_held[queue] = peak


def _state(job: dict[str, Any]) -> str:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond["type"] in ("Succeeded", "Failed") and cond["status"] == "True":
            return str(cond["type"])
    return "Running"


def _condition_time(obj: dict[str, Any] | None, type_: str) -> float | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_ and cond["status"] == "True":
            return _time(cond["lastTransitionTime"])
    return None


def _workload(custom: Any, ns: str, job: str) -> dict[str, Any] | None:
    items = custom.list_namespaced_custom_object(*KUEUE, ns, "workloads")["items"]
    for item in items:
        if any(o["name"] == job for o in item["metadata"].get("ownerReferences") or []):
            return dict(item)
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
