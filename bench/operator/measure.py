"""One controller on one workload, on a fresh control plane, measured.

    run_one(controller, workload, workdir, keep_files=False) -> RunResult

Steps: start etcd + kube-apiserver (audit log on); install the controller's CRD; start the
controller as `CONTROLLER_USER`; create a warm-up TFJob in another namespace and wait for its pod
and service (so start-up is not measured); snapshot `/metrics`, the audit log offset and the
controller's CPU; create every TFJob of the workload at once (16 client threads) while watching
pods and services appear; wait for all of them; let the controller settle (CPU quiet for 2 s, at
most `SETTLE_MAX_S`); snapshot again. A run that times out is reported as incomplete, not broken;
a run whose controller or control plane dies is broken.
"""

from __future__ import annotations

import math
import shutil
import statistics
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from pydantic import BaseModel

from bench.harness.apimetrics import (
    AuditCounter,
    RequestCounts,
    diff,
    parse_request_totals,
    reads,
    total,
    writes,
)
from bench.harness.controllers import (
    CONTROLLER_GROUPS,
    CONTROLLER_USER,
    Controller,
    RunningController,
    wait_alive,
)
from bench.harness.observer import Observer
from bench.harness.procstats import PeakSampler, settle
from bench.harness.profiler import Profiler
from bench.harness.workloads import CREATE_THREADS, Workload, create_jobs
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane

NAMESPACE = "bench"
WARMUP_NAMESPACE = "bench-warmup"
SETTLE_MAX_S = 60.0
MIB = 1024 * 1024


class RunResult(BaseModel):
    """Figures of one controller on one workload."""

    controller: str
    workload: str
    jobs: int
    replicas: int
    broken: str | None = None
    complete_jobs: int = 0
    total_s: float | None = None
    p50_s: float | None = None
    p99_s: float | None = None
    create_s: float | None = None
    settle_s: float | None = None
    api_writes_per_job: float | None = None
    api_writes: dict[str, float] = {}
    controller_writes_per_job: float | None = None
    controller_reads_per_job: float | None = None
    controller_requests: dict[str, float] = {}
    cpu_s: float | None = None
    peak_rss_mib: float | None = None
    end_rss_mib: float | None = None
    #: RSS of the warmed-up, idle controller just before the workload (its fixed part).
    idle_rss_mib: float | None = None

    @property
    def rss_growth_mib(self) -> float | None:
        """RSS after the workload settled minus the idle RSS: what the jobs cost in memory."""
        if self.end_rss_mib is None or self.idle_rss_mib is None:
            return None
        return self.end_rss_mib - self.idle_rss_mib

    @property
    def complete(self) -> bool:
        return self.broken is None and self.complete_jobs == self.jobs


def _api(kubeconfig: str) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = CREATE_THREADS
    return client.ApiClient(configuration)


def _namespace(name: str) -> client.V1Namespace:
    return client.V1Namespace(metadata=client.V1ObjectMeta(name=name))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def _flat(counts: RequestCounts, per: float) -> dict[str, float]:
    return {f"{verb} {res}": round(n / per, 3) for (verb, res), n in sorted(counts.items())}


def warm_up(api: client.ApiClient, running: RunningController, timeout_s: float = 240) -> None:
    """One small TFJob in its own namespace; returns when its pod and service exist."""
    core = client.CoreV1Api(api)
    core.create_namespace(_namespace(WARMUP_NAMESPACE))
    observer = Observer(api, WARMUP_NAMESPACE).start()
    try:
        warm = Workload(key="warm", title="warm-up", jobs=1, ps=0, workers=1)
        create_jobs(api, WARMUP_NAMESPACE, warm)
        deadline = time.monotonic() + timeout_s
        expected = dict.fromkeys(warm.job_names(), warm.replicas)
        while not observer.wait_for(expected, 1.0):
            wait_alive(running, 0)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{running.name} did not create the warm-up job's pod and service in "
                    f"{timeout_s:.0f}s; log tail:\n{running.log_tail()}"
                )
    finally:
        observer.stop()


@dataclass
class Snapshot:
    """Counters at one moment: the apiserver's requests, the audit log's end, controller CPU."""

    metrics: RequestCounts
    audit_offset: int
    cpu_s: float


@dataclass
class Stage:
    """A fresh control plane with the controller started and warmed up (see `staged`)."""

    controller: Controller
    plane: ControlPlane
    kubeconfig: str
    workdir: Path
    api: client.ApiClient
    running: RunningController
    sampler: PeakSampler
    audit: AuditCounter

    def snapshot(self) -> Snapshot:
        return Snapshot(
            metrics=parse_request_totals(self.plane.get("/metrics").decode()),
            audit_offset=self.audit.offset(),
            cpu_s=self.sampler.sample().cpu_s,
        )

    def restart(self) -> None:
        """Stop the controller (SIGTERM, as a rollout does) and start a new process."""
        self.running.stop()
        self.sampler.stop()
        self.running = self.controller.start(self.kubeconfig, self.workdir)
        self.sampler = PeakSampler(self.running.pid).start()

    def requests_since(self, result: RunResult, since: Snapshot, per: float) -> None:
        """Fill `result`'s request figures: apiserver writes and the controller's own requests
        since `since`, divided by `per` (jobs)."""
        metrics = diff(parse_request_totals(self.plane.get("/metrics").decode()), since.metrics)
        api_writes = writes(metrics)
        result.api_writes_per_job = total(api_writes) / per
        result.api_writes = _flat(api_writes, per)
        own = self.audit.counts(CONTROLLER_USER, since.audit_offset)
        result.controller_writes_per_job = total(writes(own, exclude=())) / per
        result.controller_reads_per_job = total(reads(own)) / per
        result.controller_requests = _flat({k: v for k, v in own.items() if k[0] != "WATCH"}, per)

    def memory_and_cpu(self, result: RunResult, since: Snapshot) -> None:
        """Fill CPU (since `since`), RSS now and the peak."""
        end = self.sampler.sample()
        result.cpu_s = end.cpu_s - since.cpu_s
        result.end_rss_mib = end.rss_bytes / MIB
        result.peak_rss_mib = self.sampler.peak_rss_bytes / MIB


@contextmanager
def staged(controller: Controller, workdir: Path, keep_files: bool = False) -> Iterator[Stage]:
    """Start a control plane and the controller, warm it up, create the bench namespace and let
    the controller settle; stop everything afterwards (also when the block raises)."""
    workdir.mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(directory=workdir / "controlplane", audit_log=True)
    stage: Stage | None = None
    try:
        plane.start()
        controller.install(plane)
        kubeconfig = plane.kubeconfig_for(CONTROLLER_USER, CONTROLLER_GROUPS)
        running = controller.start(kubeconfig, workdir)
        stage = Stage(
            controller=controller,
            plane=plane,
            kubeconfig=kubeconfig,
            workdir=workdir,
            api=_api(plane.kubeconfig),
            running=running,
            sampler=PeakSampler(running.pid).start(),
            audit=AuditCounter(plane.directory / "audit.log"),
        )
        wait_alive(running, 1.0)
        warm_up(stage.api, running)
        client.CoreV1Api(stage.api).create_namespace(_namespace(NAMESPACE))
        settle(stage.sampler, running, 10.0)
        yield stage
        wait_alive(stage.running, 0)
    finally:
        if stage is not None:
            stage.sampler.stop()
            stage.running.stop()
        plane.stop(remove=False)
        if not keep_files:
            shutil.rmtree(plane.directory / "etcd-data", ignore_errors=True)
            (plane.directory / "audit.log").unlink(missing_ok=True)


def wait_objects(
    observer: Observer, stage: Stage, expected: dict[str, int], deadline: float
) -> dict[str, float]:
    """Wait until every job in `expected` has its pods and services (or the deadline); return
    job -> when its last object appeared, for the complete ones."""
    while not observer.wait_for(expected, 2.0):
        wait_alive(stage.running, 0)
        if time.monotonic() > deadline:
            break
    return observer.done_times(expected)


def run_one(
    controller: Controller,
    workload: Workload,
    workdir: Path,
    keep_files: bool = False,
    profile: Path | None = None,
) -> RunResult:
    """Measure `controller` on `workload` with its own fresh control plane; with `profile`, a
    py-spy recording of the controller (collapsed stacks) from the creates to the settle."""
    result = RunResult(
        controller=controller.name,
        workload=workload.key,
        jobs=workload.jobs,
        replicas=workload.replicas,
    )
    with broken_on_error(result), staged(controller, workdir, keep_files) as stage:
        before = stage.snapshot()
        result.idle_rss_mib = stage.sampler.sample().rss_bytes / MIB
        with profiled(stage, profile), Observer(stage.api, NAMESPACE).start() as observer:
            started = time.monotonic()
            sent = create_jobs(stage.api, NAMESPACE, workload)
            result.create_s = time.monotonic() - started
            expected = dict.fromkeys(workload.job_names(), workload.replicas)
            done = wait_objects(observer, stage, expected, started + workload.timeout_s)
            result.complete_jobs = len(done)
            if done:
                latencies = [done[job] - sent[job] for job in done]
                result.p50_s = statistics.median(latencies)
                result.p99_s = _percentile(latencies, 0.99)
            if len(done) == workload.jobs:
                result.total_s = max(done.values()) - min(sent.values())
            result.settle_s = settle(stage.sampler, stage.running, SETTLE_MAX_S)
        stage.requests_since(result, before, workload.jobs)
        stage.memory_and_cpu(result, before)
    return result


@contextmanager
def broken_on_error(result: RunResult) -> Iterator[None]:
    """Any exception in the block marks `result` broken (with a short traceback) instead."""
    try:
        yield
    except Exception as err:
        detail: Any = traceback.format_exc(limit=3)
        result.broken = f"{type(err).__name__}: {err}\n{detail}"


@contextmanager
def profiled(stage: Stage, profile: Path | None) -> Iterator[None]:
    """py-spy the controller for the duration of the block when `profile` names a file."""
    profiler = Profiler(stage.running.pid, profile).start() if profile is not None else None
    try:
        yield
    finally:
        if profiler is not None:
            profiler.stop()
