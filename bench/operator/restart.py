"""Workload (d): a controller restarted among many TFJobs it already handles, then a new job.

    run_restart(controller, workload, workdir, keep_files=False, profile=None) -> RunResult

Steps, on a fresh control plane with the controller started and warmed up (`measure.staged`):
1. the workload's TFJobs are created with their pods and services (the planner's manifests,
   owned by the job, as a controller makes them; 16 client threads), as if a controller had
   run them before: quicker than having a rate-limited controller create 5,000 jobs' objects;
2. the controller catches up (status, TaaS's NetworkPolicy) until every job has its Created
   condition and its CPU is quiet; not measured;
3. the controller is stopped (SIGTERM, as a rollout does) and a new process started; at once a
   new TFJob is created. Measured from the start of the new process: the time until the new
   job's pod and service exist (`total_s`; the new process must start, list every TFJob and its
   children again, and get to the new one), its CPU until quiet (`cpu_s`, the re-list included),
   its RSS then, and every request made from the restart on (per restart, not per job).
The floor has no restart story (it would create every object again) and is not run here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from kubernetes import client

from bench.harness.controllers import Controller
from bench.harness.observer import Observer
from bench.harness.procstats import settle
from bench.harness.workloads import CREATE_THREADS, Workload, create_jobs, tfjob_manifest
from bench.operator.measure import (
    MIB,
    NAMESPACE,
    SETTLE_MAX_S,
    RunResult,
    Snapshot,
    Stage,
    broken_on_error,
    profiled,
    staged,
    wait_objects,
)
from taas_operator.api import parse_tfjob
from taas_operator.planner import BuildOptions, desired_pods, desired_services

CATCH_UP_POLL_S = 10.0


def _create(create: Callable[..., Any], namespace: str, manifest: dict[str, Any]) -> None:
    """Create; an object already there is fine (the running controller was quicker)."""
    try:
        create(namespace, manifest)
    except client.ApiException as err:
        if err.status != 409:
            raise


def prepopulate(api: client.ApiClient, namespace: str, workload: Workload) -> None:
    """Create every TFJob of the workload and, owned by it, its pods and services."""
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    options = BuildOptions()

    def make(name: str) -> None:
        body = tfjob_manifest(name, namespace, workload.ps, workload.workers)
        stored = custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "tfjobs", body
        )
        job = parse_tfjob(cast(dict[str, Any], stored))
        for pod in desired_pods(job, options):
            _create(core.create_namespaced_pod, namespace, pod)
        for service in desired_services(job):
            _create(core.create_namespaced_service, namespace, service)

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        for future in [pool.submit(make, name) for name in workload.job_names()]:
            future.result()


def _handled(api: client.ApiClient, namespace: str) -> int:
    """TFJobs whose status has a Created condition (the controller has seen them)."""
    listing = cast(
        dict[str, Any],
        client.CustomObjectsApi(api).list_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "tfjobs"
        ),
    )
    return sum(
        any(c.get("type") == "Created" for c in (job.get("status") or {}).get("conditions") or [])
        for job in listing.get("items") or []
    )


def catch_up(stage: Stage, workload: Workload, deadline: float) -> int:
    """Wait until the controller has handled every job and is quiet; return how many it has."""
    handled = 0
    while time.monotonic() < deadline:
        settle(stage.sampler, stage.running, SETTLE_MAX_S)
        handled = _handled(stage.api, NAMESPACE)
        if handled >= workload.jobs:
            break
        time.sleep(CATCH_UP_POLL_S)
    return handled


def run_restart(
    controller: Controller,
    workload: Workload,
    workdir: Path,
    keep_files: bool = False,
    profile: Path | None = None,
) -> RunResult:
    """Measure `controller` restarting among `workload.jobs` handled TFJobs (see the module)."""
    result = RunResult(
        controller=controller.name,
        workload=workload.key,
        jobs=workload.jobs,
        replicas=workload.replicas,
    )
    with broken_on_error(result), staged(controller, workdir, keep_files) as stage:
        started = time.monotonic()
        prepopulate(stage.api, NAMESPACE, workload)
        result.create_s = time.monotonic() - started
        result.complete_jobs = catch_up(stage, workload, started + workload.timeout_s)
        result.idle_rss_mib = stage.sampler.sample().rss_bytes / MIB  # before the restart
        new = Workload(key=f"{workload.key}new", title="new", jobs=1, ps=0, workers=1)
        expected = dict.fromkeys(new.job_names(), new.replicas)
        with Observer(stage.api, NAMESPACE).start() as observer:
            before = stage.snapshot()
            stage.restart()
            restarted = time.monotonic()
            with profiled(stage, profile):
                create_jobs(stage.api, NAMESPACE, new)
                done = wait_objects(observer, stage, expected, restarted + workload.timeout_s)
                if done:
                    result.total_s = max(done.values()) - restarted
                result.settle_s = settle(stage.sampler, stage.running, SETTLE_MAX_S)
        stage.requests_since(result, before, per=1)
        # the new process's CPU from its start (the old one's is not counted)
        stage.memory_and_cpu(result, Snapshot(metrics={}, audit_offset=0, cpu_s=0.0))
    return result
