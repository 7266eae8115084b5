"""(e) TFJobs that train for a minute: what training progress costs the operator, in writes and
CPU per job, against training-operator.

    run_training(name, jobs, seconds, workdir, keep_files=False) -> TrainingResult
    training_table(results) -> str
    CONTESTANTS: "taas" (progress on: the default), "taas-noprogress" (--no-progress), "kubeflow"

Per contestant, on its own fresh control plane (audit log on): install its CRD, start it as
`CONTROLLER_USER`, warm up; create `jobs` TFJobs (1 PS + 2 workers, `cleanPodPolicy: Running`
written out so both controllers clean up the same pods; the chief's `TAAS_PROGRESS_PORT` points
at a port where this process serves the trainer library's own publisher, `taas.core.publish`). When
every pod exists, play the kubelet: every pod Running with pod IP 127.0.0.1. Each chief then
publishes a new progress document every second for `seconds` (a training run of that length),
after which worker 0 of every job exits 0. Wait until every job Succeeded and its PS and worker
1 are deleted, let the controller settle (CPU quiet), and count the controller's own requests
(audit log, by its user) and its CPU, from the first create to the settle.

The publishers serve for every contestant (only TaaS with progress on reads them), so the
machine's load is the same in all three runs. training-operator has no progress: the figure
compared is writes per job, which progress must not push above training-operator's.
"""

from __future__ import annotations

import shutil
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client
from pydantic import BaseModel

from bench.harness.apimetrics import AuditCounter, reads, total, writes
from bench.harness.controllers import (
    CONTROLLER_GROUPS,
    CONTROLLER_USER,
    CONTROLLERS,
    Controller,
    RunningController,
    TaasController,
    wait_alive,
)
from bench.harness.procstats import PeakSampler, settle
from bench.harness.workloads import IMAGE
from bench.operator.measure import _api, _namespace, warm_up
from taas.core.publish import Publisher, document
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports

NAMESPACE = "bench-train"
JOB_LABEL = "training.kubeflow.org/job-name"
SETTLE_MAX_S = 60.0


class TaasNoProgress(TaasController):
    """TaaS with progress off (`--no-progress`)."""

    def command(self, kubeconfig: str) -> list[str]:
        return [*super().command(kubeconfig), "--no-progress"]


CONTESTANTS: dict[str, Controller] = {
    "taas": CONTROLLERS["taas"],
    "taas-noprogress": TaasNoProgress("taas-noprogress", "TaaS --no-progress"),
    "kubeflow": CONTROLLERS["kubeflow"],
}


class TrainingResult(BaseModel):
    """Figures of one contestant on workload (e)."""

    controller: str
    jobs: int
    seconds: float
    broken: str | None = None
    succeeded_jobs: int = 0
    controller_writes_per_job: float | None = None
    status_writes_per_job: float | None = None
    controller_reads_per_job: float | None = None
    controller_requests: dict[str, float] = {}
    cpu_s_per_job: float | None = None
    wall_s: float | None = None


def manifest(name: str, port: int) -> dict[str, Any]:
    """1 PS + 2 workers, cleanup spelled out; the chief serves progress on `port`."""

    def replica(count: int, env: list[dict[str, str]]) -> dict[str, Any]:
        container = {"name": "tensorflow", "image": IMAGE, "env": env}
        return {
            "replicas": count,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }

    progress = [{"name": "TAAS_PROGRESS_PORT", "value": str(port)}]
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Running"},
            "tfReplicaSpecs": {"PS": replica(1, []), "Worker": replica(2, progress)},
        },
    }


def _pod_status(phase: str, exit_code: int | None = None) -> dict[str, Any]:
    """What a kubelet writes (the tests' `set_pod_phase`), with pod IP 127.0.0.1."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if phase == "Running":
        state: dict[str, Any] = {"running": {"startedAt": now}}
    else:
        reason = "Completed" if exit_code == 0 else "Error"
        state = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": now}}
    container = {
        "name": "tensorflow",
        "image": IMAGE,
        "imageID": "",
        "ready": phase == "Running",
        "restartCount": 0,
        "state": state,
    }
    return {"status": {"phase": phase, "podIP": "127.0.0.1", "containerStatuses": [container]}}


def _pods(core: client.CoreV1Api) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector=JOB_LABEL).items:
        found.setdefault(pod.metadata.labels[JOB_LABEL], []).append(pod.metadata.name)
    return found


def _wait(what: str, probe: Any, running: RunningController, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        wait_alive(running, 0)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{running.name}: {what} not reached in {timeout_s:.0f}s")
        time.sleep(0.5)


def run_training(
    name: str, jobs: int, seconds: float, workdir: Path, keep_files: bool = False
) -> TrainingResult:
    """Measure contestant `name` on `jobs` jobs training `seconds` each (see the module)."""
    result = TrainingResult(controller=name, jobs=jobs, seconds=seconds)
    workdir.mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(directory=workdir / "controlplane", audit_log=True)
    running: RunningController | None = None
    sampler: PeakSampler | None = None
    names = [f"train-{i:03d}" for i in range(jobs)]
    ports = free_ports(jobs)
    chiefs = [Publisher("worker:0", port=port) for port in ports]
    try:
        plane.start()
        controller = CONTESTANTS[name]
        controller.install(plane)
        running = controller.start(
            plane.kubeconfig_for(CONTROLLER_USER, CONTROLLER_GROUPS), workdir
        )
        sampler = PeakSampler(running.pid).start()
        api = _api(plane.kubeconfig)
        wait_alive(running, 1.0)
        warm_up(api, running)
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        core.create_namespace(_namespace(NAMESPACE))
        audit = AuditCounter(plane.directory / "audit.log")
        settle(sampler, running, 10.0)
        audit_from, cpu_before = audit.offset(), sampler.sample().cpu_s
        started = time.monotonic()

        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda job: custom.create_namespaced_custom_object(
                        "kubeflow.org", "v1", NAMESPACE, "tfjobs", manifest(*job)
                    ),
                    zip(names, ports, strict=True),
                )
            )
        pods = _wait(
            "every pod created",
            lambda: p if sum(map(len, (p := _pods(core)).values())) == 3 * jobs else None,
            running,
            240,
        )
        for pod in sorted(n for group in pods.values() for n in group):
            core.patch_namespaced_pod_status(pod, NAMESPACE, _pod_status("Running"))
        trained = time.monotonic()
        step = 0
        while time.monotonic() - trained < seconds:  # one document a second, as the trainer
            step += 1
            for chief in chiefs:
                chief.update(document("worker:0", step, int(seconds) + 1, 1.0 / step, 100.0, 1.0))
            time.sleep(1.0)
        for job in names:
            core.patch_namespaced_pod_status(
                f"{job}-worker-0", NAMESPACE, _pod_status("Succeeded", 0)
            )

        def finished() -> bool:
            items = custom.list_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "tfjobs")[
                "items"
            ]
            done = [
                j
                for j in items
                if any(
                    c["type"] == "Succeeded" and c["status"] == "True"
                    for c in (j.get("status") or {}).get("conditions") or []
                )
            ]
            result.succeeded_jobs = len(done)
            left = sum(map(len, _pods(core).values()))
            return len(done) == jobs and left == jobs  # only the workers 0 remain

        _wait("every job Succeeded and cleaned up", finished, running, 240)
        settle(sampler, running, SETTLE_MAX_S)
        result.wall_s = time.monotonic() - started
        own = audit.counts(CONTROLLER_USER, audit_from)
        result.controller_writes_per_job = total(writes(own, exclude=())) / jobs
        result.status_writes_per_job = (
            sum(v for (verb, res), v in own.items() if res == "tfjobs/status" and verb != "GET")
            / jobs
        )
        result.controller_reads_per_job = total(reads(own)) / jobs
        result.controller_requests = {
            f"{verb} {res}": round(n / jobs, 3)
            for (verb, res), n in sorted(own.items())
            if verb != "WATCH"
        }
        result.cpu_s_per_job = (sampler.sample().cpu_s - cpu_before) / jobs
        wait_alive(running, 0)
    except Exception as err:
        result.broken = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}"
    finally:
        for chief in chiefs:
            chief.stop()
        if sampler is not None:
            sampler.stop()
        if running is not None:
            running.stop()
        plane.stop(remove=False)
        if not keep_files:
            shutil.rmtree(plane.directory / "etcd-data", ignore_errors=True)
            (plane.directory / "audit.log").unlink(missing_ok=True)
    return result


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def training_table(results: list[TrainingResult]) -> str:
    """Writes, status writes, reads and CPU per job; ratios against training-operator."""
    by_name = {r.controller: r for r in results}
    order = [n for n in CONTESTANTS if n in by_name]
    first = results[0] if results else None
    title = (
        f"(e) {first.jobs} TFJobs x 3 replicas training {first.seconds:.0f} s, progress every "
        f"second from each chief"
        if first
        else "(e) no run"
    )
    width = 40
    lines = [title, f"{'figure':<{width}}" + "".join(f"{n:>17}" for n in order)]
    if "kubeflow" in by_name:
        lines[-1] += "".join(f"{n + '/t-op':>22}" for n in order if n != "kubeflow")
    lines.append("-" * len(lines[-1]))
    rows = [
        ("  jobs succeeded", lambda r: float(r.succeeded_jobs)),
        ("  controller writes per job (audit)", lambda r: r.controller_writes_per_job),
        ("    of which status writes", lambda r: r.status_writes_per_job),
        ("  controller GET+LIST per job", lambda r: r.controller_reads_per_job),
        ("  controller CPU per job (s)", lambda r: r.cpu_s_per_job),
    ]
    for label, get in rows:
        values = {n: (None if by_name[n].broken else get(by_name[n])) for n in order}
        line = f"{label:<{width}}" + "".join(f"{_fmt(values[n]):>17}" for n in order)
        base = values.get("kubeflow")
        for n in order:
            if n == "kubeflow" or "kubeflow" not in by_name:
                continue
            ratio = "-" if not base or values[n] is None else f"{values[n] / base:.2f}x"
            line += f"{ratio:>22}"
        lines.append(line)
    for run in results:
        if run.broken:
            lines.append(f"  {run.controller}: BROKEN: {run.broken.splitlines()[0]}")
        else:
            parts = ", ".join(f"{k} {v:g}" for k, v in run.controller_requests.items())
            lines.append(f"  {run.controller} requests per job: {parts}")
    return "\n".join(lines)
