"""A fresh simulated cluster with one contestant on it, warmed up, and its counters.

    with staged(controller, scenario, workdir, keep_files=False) as stage:
        stage.sim, stage.running, stage.sampler, stage.audit, stage.clock
        before = stage.snapshot()         # apiserver writes, audit offset, controller CPU/RSS
        ...
        stage.figures(result, before, pods)   # writes, CPU, RSS into the result
        stage.check()                     # raise if the controller or a cluster part died

Why a fresh cluster per run: the contestants install different CRDs (TaaS's, Kubeflow's), and
what a run leaves (10,000 pods and services, their endpoints, etcd's history, the scheduler's
and the garbage collector's caches, pods still terminating) would be the next contestant's
load. A fresh etcd, kube-apiserver, scheduler, controller-manager and kwok per run gives each
the same cluster; 1,000 nodes come up in about half a minute, small beside a run.

The controller runs as `CONTROLLER_USER` (bench.harness.controllers), whose requests alone the
apiserver's audit log records. Start-up is not measured: a warm-up TFJob (one worker that exits
0) in another namespace must finish first (for the floor, which writes no status: its pod).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.apimetrics import (
    AuditCounter,
    RequestCounts,
    diff,
    parse_request_totals,
    total,
    writes,
)
from bench.harness.clock import Clock
from bench.harness.controllers import (
    CONTROLLER_GROUPS,
    CONTROLLER_USER,
    Controller,
    RunningController,
    wait_alive,
)
from bench.harness.procstats import PeakSampler, settle
from bench.scale.results import ScaleResult
from bench.scale.scenarios import Scenario
from taas_controlplane.sim.annotations import container_plan
from taas_controlplane.sim.cluster import SimCluster, Timings
from taas_operator.api.resources import POD, TFJOB

NAMESPACE = "scale"
WARMUP_NAMESPACE = "scale-warmup"
MIB = 1024 * 1024
JSON = "application/json"


class StageError(RuntimeError):
    """The controller or a part of the simulated cluster died, or did not get going."""


@dataclass
class Snapshot:
    metrics: RequestCounts
    audit_offset: int
    cpu_s: float
    rss_bytes: int


@dataclass
class Stage:
    controller: Controller
    sim: SimCluster
    running: RunningController
    sampler: PeakSampler
    audit: AuditCounter
    clock: Clock

    def check(self) -> None:
        """Raise if the controller or a part of the cluster has exited."""
        wait_alive(self.running, 0)
        gone = self.sim.exited()
        if gone:
            raise StageError(
                f"{gone} of the simulated cluster exited (logs in {self.sim.directory})"
            )

    def snapshot(self) -> Snapshot:
        sample = self.sampler.sample()
        return Snapshot(
            metrics=parse_request_totals(self.sim.plane.get("/metrics", timeout=30).decode()),
            audit_offset=self.audit.offset(),
            cpu_s=sample.cpu_s,
            rss_bytes=sample.rss_bytes,
        )

    def wait(self, probe: object, timeout_s: float, what: str) -> float | None:
        """Poll `probe()` (a callable returning a time or None) every 0.5 s; its value, or None
        after `timeout_s`."""
        assert callable(probe)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check()
            found = probe()
            if found is not None:
                return float(found)
            time.sleep(0.5)
        print(f"[bench]   gave up waiting for {what} after {timeout_s:.0f}s", flush=True)
        return None

    def figures(self, result: ScaleResult, before: Snapshot, pods: int) -> None:
        """Requests, CPU and memory since `before`, per pod where it says so."""
        result.settle_s = settle(self.sampler, self.running, 60.0)
        end = self.sampler.sample()
        result.cpu_s = end.cpu_s - before.cpu_s
        result.idle_rss_mib = before.rss_bytes / MIB
        result.peak_rss_mib = self.sampler.peak_rss_bytes / MIB
        metrics = diff(
            parse_request_totals(self.sim.plane.get("/metrics", timeout=30).decode()),
            before.metrics,
        )
        result.api_writes_per_pod = total(writes(metrics)) / pods
        own = self.audit.counts(CONTROLLER_USER, before.audit_offset)
        result.controller_writes_per_pod = total(writes(own, exclude=())) / pods
        result.controller_reads_per_pod = sum(
            n for (v, _), n in own.items() if v in ("GET", "LIST")
        )
        result.controller_reads_per_pod /= pods
        result.controller_requests = {
            f"{verb} {res}": round(n / pods, 4)
            for (verb, res), n in sorted(own.items())
            if verb != "WATCH"
        }


def _timings(scenario: Scenario) -> Timings:
    """Kubernetes' own node timings for the load scenarios. (f): a silent node NotReady after
    20 s, not 50 s (what is measured starts there), with leases renewed every 5 s (the tests'
    2 s would be 500 lease writes a second from 1,000 nodes on these two cores)."""
    if not scenario.node_loss:
        return Timings.defaults()
    return Timings(
        lease_duration_seconds=20,
        node_monitor_period="1s",
        node_monitor_grace_period="20s",
        node_startup_grace_period="1m0s",
    )


def _get(clock: Clock, path: str) -> dict[str, Any]:
    """The object at `path`, or {} when there is none (yet)."""
    status, answer = clock.request("GET", path)
    return answer if status == 200 and isinstance(answer, dict) else {}


def _warm_up(stage: Stage, timeout_s: float = 300.0) -> None:
    """One TFJob of one worker that exits 0; wait until it Succeeded (the floor: its pod)."""
    clock = stage.clock
    clock.request("POST", "/api/v1/namespaces", {"metadata": {"name": WARMUP_NAMESPACE}})
    template = {
        "metadata": {"annotations": container_plan(exit_code=0)},
        "spec": {"containers": [{"name": "tensorflow", "image": "registry.invalid/warm:1"}]},
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "warm", "namespace": WARMUP_NAMESPACE},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"replicas": 1, "restartPolicy": "Never", "template": template}
            }
        },
    }
    status, answer = clock.request("POST", TFJOB.path(WARMUP_NAMESPACE), job)
    if status >= 300:
        raise StageError(f"the warm-up TFJob was refused: HTTP {status}: {answer}")
    floor = stage.controller.name == "floor"

    def done() -> float | None:
        if floor:
            pod = _get(clock, POD.path(WARMUP_NAMESPACE, "warm-worker-0"))
            finished = (pod.get("status") or {}).get("phase") == "Succeeded"
        else:
            conditions = (
                _get(clock, TFJOB.path(WARMUP_NAMESPACE, "warm")).get("status") or {}
            ).get("conditions") or []
            finished = any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)
        return time.monotonic() if finished else None

    if stage.wait(done, timeout_s, "the warm-up job") is None:
        raise StageError(
            f"{stage.running.name} did not finish the warm-up job in {timeout_s:.0f}s; log "
            f"tail:\n{stage.running.log_tail()}"
        )


@contextmanager
def staged(
    controller: Controller, scenario: Scenario, workdir: Path, keep_files: bool = False
) -> Iterator[Stage]:
    """A fresh simulated cluster of the scenario's shape with `controller` on it, warmed up,
    the namespace `scale` made and the controller quiet; everything stopped afterwards."""
    workdir.mkdir(parents=True, exist_ok=True)
    sim = SimCluster(
        nodes=scenario.nodes,
        gpu_nodes=scenario.gpu_nodes,
        directory=workdir / "sim",
        timings=_timings(scenario),
        audit_users=[CONTROLLER_USER],
    )
    running: RunningController | None = None
    sampler: PeakSampler | None = None
    clock: Clock | None = None
    try:
        started = time.monotonic()
        sim.start(timeout=900.0)
        print(
            f"[bench]   {scenario.nodes} nodes Ready in {time.monotonic() - started:.0f}s",
            flush=True,
        )
        controller.install(sim.plane)
        running = controller.start(
            sim.plane.kubeconfig_for(CONTROLLER_USER, CONTROLLER_GROUPS), workdir
        )
        sampler = PeakSampler(running.pid).start()
        clock = Clock(sim.kubeconfig, NAMESPACE).start()
        stage = Stage(
            controller=controller,
            sim=sim,
            running=running,
            sampler=sampler,
            audit=AuditCounter(sim.plane.directory / "audit.log"),
            clock=clock,
        )
        wait_alive(running, 1.0)
        _warm_up(stage)
        clock.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        settle(sampler, running, 20.0)
        yield stage
        stage.check()
    finally:
        if clock is not None:
            clock.stop()
        if sampler is not None:
            sampler.stop()
        if running is not None:
            running.stop()
        sim.stop()
        if not keep_files:
            shutil.rmtree(sim.plane.directory / "etcd-data", ignore_errors=True)
            (sim.plane.directory / "audit.log").unlink(missing_ok=True)
