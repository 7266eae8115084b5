"""Scenarios (d) and (e): every TFJob applied at once, every pod Running, every job done.

    measure_load(stage, scenario, result)     # fills `result` (bench.scale.results)

1. the TFJobs are POSTed at once (16 in flight); the clock (bench.harness.clock) watches;
2. all Running: every one of the scenario's pods has been seen Running (the time of the last);
   the controller's RSS is read then (every pod is in its caches);
3. the harness ends every worker (a PATCH of `sim.taas.dev/exit-code: 0`, kwok's stage then
   ends the container), as the trainers of a finished training do: worker 0 of each job last,
   once the others have ended (its success ends the job; cleanPodPolicy Running then deletes
   the PS and their services);
4. all done: every TFJob has its Succeeded condition (the floor writes no status: every worker
   pod Succeeded); cleaned up: every PS pod deleted (cleanPodPolicy Running; not the floor);
   then the controller is left to settle and its figures are read, so they hold all the work
   the scenario asked of it.
Pod start-up: each pod's creation (first seen by the watch) until it was seen Running, SIG
Scalability's SLI; and, as a check, the same by the pod's own stamps (the apiserver's
creationTimestamp -> the containers' startedAt written by kwok; whole seconds).
"""

from __future__ import annotations

import statistics
import time

from bench.harness.clock import Clock, JobTimes, PodTimes
from bench.scale.results import ScaleResult, percentile
from bench.scale.scenarios import Scenario, tfjob_manifest
from bench.scale.stage import JSON, NAMESPACE, Stage
from taas_controlplane.sim.annotations import EXIT_CODE
from taas_operator.api.resources import POD, TFJOB

MERGE_PATCH = "application/merge-patch+json"


def _workers(pods: dict[str, PodTimes]) -> list[str]:
    return sorted({p.name for p in pods.values() if p.replica_type.lower() == "worker"})


def _moments(
    pods: dict[str, PodTimes], wanted: set[str]
) -> tuple[float | None, float | None, list[float], list[float]]:
    """The last pod seen, the last one bound, each pod's creation -> bound and bound ->
    Running."""
    mine = [p for p in pods.values() if p.job in wanted]
    seen = max((p.seen for p in mine), default=None)
    bound = [p.scheduled for p in mine if p.scheduled is not None]
    return (
        seen,
        max(bound, default=None),
        [p.scheduled - p.seen for p in mine if p.scheduled is not None],
        [p.running - p.scheduled for p in mine if p.scheduled and p.running],
    )


def _stamped_starts(pods: dict[str, PodTimes], wanted: set[str]) -> list[float]:
    """Each pod's start-up by its own stamps: creationTimestamp -> containers started."""
    return [
        p.started_stamp - p.created_stamp
        for p in pods.values()
        if p.job in wanted and p.started_stamp is not None and p.created_stamp is not None
    ]


def _ps_gone(pods: dict[str, PodTimes], wanted: set[str]) -> float | None:
    """When the last PS pod of the jobs was deleted, once every one of them is gone."""
    gone = [p.gone for p in pods.values() if p.job in wanted and p.replica_type.lower() == "ps"]
    if not gone or any(g is None for g in gone):
        return None
    return max(g for g in gone if g is not None)


def _end(clock: Clock, names: list[str]) -> None:
    """Their containers exit 0 now (kwok's stage reads the annotation)."""
    patch = {"metadata": {"annotations": {EXIT_CODE: "0"}}}
    clock.requests([("PATCH", POD.path(NAMESPACE, n), patch, MERGE_PATCH) for n in names])


def measure_load(stage: Stage, scenario: Scenario, result: ScaleResult) -> None:
    clock, floor = stage.clock, stage.controller.name == "floor"
    before = stage.snapshot()
    names = scenario.job_names()
    started = time.monotonic()
    answers = clock.requests(
        [
            ("POST", TFJOB.path(NAMESPACE), tfjob_manifest(n, NAMESPACE, scenario), JSON)
            for n in names
        ]
    )
    refused = [a for a in answers if a[0] >= 300]
    if refused:
        raise RuntimeError(f"{len(refused)} TFJobs refused, first: {refused[0]}")
    result.create_s = time.monotonic() - started
    wanted = set(names)

    def all_running(pods: dict[str, PodTimes], _: dict[str, JobTimes]) -> float | None:
        first: dict[str, float] = {}
        for pod in pods.values():
            if pod.job in wanted and pod.running is not None:
                first[pod.name] = min(pod.running, first.get(pod.name, pod.running))
        result.pods_running = len(first)
        return max(first.values()) if len(first) >= scenario.pods else None

    running_at = stage.wait(lambda: clock.view(all_running), scenario.timeout_s, "all Running")
    result.rss_at_running_mib = stage.sampler.sample().rss_bytes / (1024 * 1024)
    created, bound, to_bind, to_run = clock.view(lambda pods, _: _moments(pods, wanted))
    result.all_created_s = created - started if created is not None else None
    result.all_bound_s = bound - started if bound is not None else None
    if to_bind:
        result.pod_bound_p99_s = percentile(to_bind, 0.99)
    if to_run:
        result.pod_bound_to_running_p99_s = percentile(to_run, 0.99)
    starts = clock.view(
        lambda pods, _: [
            p.running - p.seen for p in pods.values() if p.job in wanted and p.running is not None
        ]
    )
    if starts:
        result.pod_start_p50_s = statistics.median(starts)
        result.pod_start_p99_s = percentile(starts, 0.99)
        result.pod_start_max_s = max(starts)
    stamped = clock.view(lambda pods, _: _stamped_starts(pods, wanted))
    if stamped:
        result.pod_start_stamped_p50_s = statistics.median(stamped)
        result.pod_start_stamped_p99_s = percentile(stamped, 0.99)
    if running_at is None:
        stage.figures(result, before, scenario.pods)
        return
    result.all_running_s = running_at - started

    workers = clock.view(lambda pods, _: _workers(pods))
    ending = time.monotonic()
    # worker 0 last, as a chief that saves the model: its success ends the job (Kubeflow's rule
    # without a chief), and cleanPodPolicy Running then removes only the PS
    last = [w for w in workers if w.endswith("-worker-0")]
    rest = [w for w in workers if not w.endswith("-worker-0")]
    _end(clock, rest)
    rest_set = set(rest)

    def rest_ended(pods: dict[str, PodTimes], _: dict[str, JobTimes]) -> float | None:
        ended = {p.name for p in pods.values() if p.name in rest_set and p.ended}
        return time.monotonic() if len(ended) >= len(rest) else None

    stage.wait(lambda: clock.view(rest_ended), scenario.timeout_s, "the workers ended")
    _end(clock, last)
    worker_set = set(workers)

    def all_done(pods: dict[str, PodTimes], jobs: dict[str, JobTimes]) -> float | None:
        if floor:
            ended = {p.name: p.ended for p in pods.values() if p.name in worker_set and p.ended}
            result.jobs_done = len(ended)  # the floor: workers ended
            return max(ended.values()) if len(ended) >= len(workers) else None
        done = [j.succeeded for n, j in jobs.items() if n in wanted and j.succeeded]
        result.jobs_done = len(done)
        return max(done) if len(done) >= len(names) else None

    done_at = stage.wait(lambda: clock.view(all_done), scenario.timeout_s, "all done")
    if done_at is not None:
        result.all_done_s = done_at - started
        result.finish_s = done_at - ending
        if not floor:  # cleanPodPolicy Running: the PS pods go (the floor has no policy)
            gone = stage.wait(
                lambda: clock.view(lambda pods, _: _ps_gone(pods, wanted)),
                scenario.timeout_s,
                "the PS pods deleted",
            )
            if gone is not None:
                result.cleaned_s = gone - done_at
    stage.figures(result, before, scenario.pods)
