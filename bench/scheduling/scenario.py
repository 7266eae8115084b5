"""Many gang jobs competing for GPU quotas on a simulated cluster: Kueue admits each whole within
its queue's quota, coscheduling places each whole, the TFJob controller (TaaS, or Kubeflow's
training-operator as the baseline) runs them.

    shape = GangShape.full() / GangShape.quick()
    with GangRun(shape, workdir, CONTROLLERS["taas"]) as run:   # the cluster, schedulers,
                                                                # the controller
        result = run.run()                     # creates the jobs, waits, measures, checks
    result.problems                            # [] when every check held
    result.notes                               # worth knowing, not wrong

What runs: a `SimCluster` (real etcd, kube-apiserver, kube-scheduler, kube-controller-manager; kwok
plays `shape.nodes` GPU nodes of 8 `nvidia.com/gpu` each), scheduler-plugins' scheduler and
controller and Kueue with its `kubeflow.org/tfjob` integration
(`taas_controlplane.cluster.scheduling`), and the TFJob controller under test: TaaS's operator
(`python -m taas_operator.controller --gang-scheduler-name=scheduler-plugins`, defaults otherwise,
TaaS's CRD) or Kubeflow's training-operator v1.8.1
(`--gang-scheduler-name=scheduler-plugins-scheduler`: it makes the same PodGroups and names the
scheduler its pods go to by that flag; its own CRD, which Kueue is
started with), both as `bench.harness.controllers` runs them. Kueue's objects: one
ResourceFlavor `gpu` (node label `nvidia.com/gpu.present: "true"`), and per queue a ClusterQueue
with `shape.quota` GPUs (and CPU and memory to match) and a LocalQueue in the queue's own
namespace. The jobs: `shape.jobs`
TFJobs of Workers only, between `shape.min_workers` and `shape.max_workers` replicas (seeded),
one GPU each, spread over the queues in turn, created at once from 16 threads; every fake
container exits 0 after `shape.run_seconds` (kwok, `sim.taas.dev/run-seconds`);
`successPolicy: AllWorkers` and `cleanPodPolicy: None`, so a job ends when its last pod does and
the pods stay to be measured.

Checks (each failure is a line in `problems`): every job Succeeded within `shape.timeout_s` (no
deadlock); the GPUs Kueue had admitted in each queue never above its quota (its ClusterQueue status,
sampled every second); and, independently of Kueue, the GPUs the pods of each queue held at any
instant never above the quota, from one watch of every pod (`bench.harness.clock`); every pod ran on
a node and ended, and none ran again after it ended (gangs.py, which also gives the figures per
job); the pods' watch never listed again (a change in the gap could be missed; a stream cut and
resumed from its last version misses nothing: a line in `notes`).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.harness.clock import Clock
from bench.harness.controllers import (
    CONTROLLER_GROUPS,
    CONTROLLER_USER,
    KubeflowController,
    RunningController,
    TaasController,
)
from bench.harness.controllers import Controller as TFJobController
from bench.scheduling.gangs import KUEUE, GangResult, job_name, measure_jobs
from bench.scheduling.shape import GangShape
from taas_controlplane.cluster.scheduling import SchedulingOptions
from taas_controlplane.cluster.scheduling.coscheduling import DEFAULT_SCHEDULER_NAME
from taas_controlplane.parts import Parts
from taas_controlplane.sim.annotations import container_plan
from taas_controlplane.sim.cluster import SimCluster
from taas_operator.api.quantity import parse_quantity

GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


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
                            used = int(parse_quantity(resource.get("total", "0")) or 0)
                            self.peak[queue] = max(self.peak[queue], used)


def gang_arguments(controller: TFJobController) -> list[str]:
    """How each controller is told to gang its pods with scheduler-plugins' coscheduling."""
    if isinstance(controller, KubeflowController):
        return [f"--gang-scheduler-name={DEFAULT_SCHEDULER_NAME}"]  # the pods' schedulerName
    if isinstance(controller, TaasController):
        return ["--gang-scheduler-name=scheduler-plugins"]  # TaaS names the scheduler itself
    raise ValueError(f"{controller.name} cannot gang-schedule: choose taas or kubeflow")


class GangRun(Parts):
    """One run: the simulated cluster with both schedulers, the TFJob controller, the jobs."""

    def __init__(self, shape: GangShape, workdir: Path, controller: TFJobController) -> None:
        self.shape, self.workdir, self.controller = shape, workdir, controller
        self.gang_arguments = gang_arguments(controller)
        options = SchedulingOptions(coscheduling=True, kueue=True, job_crds=[controller.crd()])
        self.sim = SimCluster(
            nodes=shape.nodes, gpu_nodes=shape.nodes, directory=workdir / "sim", scheduling=options
        )
        self.running: RunningController | None = None

    def start(self) -> GangRun:
        self.sim.start(timeout=600)
        try:
            self._queues()
            self.controller.install(self.sim.plane)
            kubeconfig = self.sim.plane.kubeconfig_for(CONTROLLER_USER, CONTROLLER_GROUPS)
            self.running = self.controller.start(kubeconfig, self.workdir, self.gang_arguments)
        except BaseException:
            self.sim.stop()
            raise
        return self

    def stop(self) -> None:
        if self.running is not None:
            self.running.stop()
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
            ns = GangShape.namespace(queue)
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
            "metadata": {"name": job_name(index), "labels": {QUEUE_LABEL: "team"}},
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
        clock = Clock(self.sim.kubeconfig, "").start()  # every namespace's pods, as they change
        sampler = _UsageSampler(self.sim.api, shape.queues)
        with clock, sampler, ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda job: custom.create_namespaced_custom_object(
                        "kubeflow.org", "v1", GangShape.namespace(job[1]), "tfjobs",
                        self.job_manifest(job[0], job[2]),
                    ),
                    jobs,
                )
            )  # fmt: skip
            finished = self._wait_finished(shape, clock)
            result.peak_admitted = dict(sampler.peak)
            pods = clock.view(lambda pods, _: dict(pods))
            result.problems += [f"the pods' watch: {error}" for error in clock.errors]
            result.notes += [f"the pods' watch went on after a cut: {cut}" for cut in clock.resumed]
        result.makespan_s = time.time() - started
        if finished:
            result.problems.append(f"not Succeeded after {shape.timeout_s:.0f}s: {finished}")
        measure_jobs(self.sim.api, jobs, pods, result, self.workdir)
        for queue, peak in {**result.peak_admitted}.items():
            if peak > shape.quota:
                result.problems.append(f"queue {queue}: Kueue admitted {peak} GPUs > {shape.quota}")
        for queue, peak in result.peak_held.items():
            if peak > shape.quota:
                result.problems.append(f"queue {queue}: pods held {peak} GPUs > {shape.quota}")
        return result

    def _wait_finished(self, shape: GangShape, clock: Clock) -> list[str]:
        """Wait until every job Succeeded (or one failed), as the clock's TFJob watch shows;
        the ones still not Succeeded."""
        deadline = time.monotonic() + shape.timeout_s
        while True:
            jobs = clock.view(lambda _, jobs: dict(jobs))
            pending = sorted(name for name, job in jobs.items() if job.succeeded is None)
            failed = sorted(name for name, job in jobs.items() if job.failed is not None)
            if failed or (not pending and len(jobs) == shape.jobs):
                return failed
            if self.running is not None and not self.running.alive():
                print(f"{self.controller.name} exited:\n{self.running.log_tail()}", flush=True)
                return pending
            if time.monotonic() > deadline or self.sim.exited():
                return pending
            time.sleep(2.0)
