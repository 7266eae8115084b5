"""What one Katib trial's figures are made of, without a cluster: the pure part of bench.katib.

    experiment(example, trials, parallel) -> the Experiment to apply
    record_trial(trials, event_type, trial, now, metric)   # a Clock handler's work
    all_running(pods, job, replicas) -> when the job's pods were all Running
    first_step_at(log) -> when the chief printed its first step (`kubectl logs --timestamps`)
    trial_run(controller, round_, times, running, first_step, wall_offset) -> TrialRun

Times from the watch are `time.monotonic()` when the event arrived (bench.harness.clock); the log's
are the kubelet's wall-clock stamps, brought onto the same clock by `wall_offset` (`time.time() -
time.monotonic()` of the harness: the node is this machine, one clock).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from bench.harness.clock import PodTimes

#: The line every task of a trainer-library program prints after its first training step
#: (taas.core.loop); the chief's comes from the trial's primary pod.
FIRST_STEP = "first step done"
#: What Katib writes as a metric's value when the collector reported none.
UNAVAILABLE = "unavailable"


class TrialRun(BaseModel):
    """One trial under one controller: seconds from the trial's creation to each moment."""

    controller: str
    round: int
    trial: str
    #: every pod of the trial's TFJob Running (the controller made them, the kubelet ran them)
    running_s: float | None = None
    #: the chief's first training step (its "first step done" line)
    first_step_s: float | None = None
    #: the trial's status.observation carries the objective metric (Katib read it)
    collected_s: float | None = None
    error: str | None = None


@dataclass
class TrialTimes:
    """One trial as the watch showed it (monotonic seconds)."""

    name: str
    created: float
    collected: float | None = None
    #: the Failed condition's message, once the trial failed
    failed: str | None = None


def experiment(example: dict[str, Any], trials: int, parallel: int) -> dict[str, Any]:
    """`example` (an Experiment) cut to `trials` trials, at most `parallel` at a time."""
    made = copy.deepcopy(example)
    made["spec"].update(maxTrialCount=trials, parallelTrialCount=min(parallel, trials))
    return made


def replicas(experiment: dict[str, Any]) -> int:
    """How many pods each trial's TFJob has."""
    specs = experiment["spec"]["trialTemplate"]["trialSpec"]["spec"]["tfReplicaSpecs"]
    return sum(int(spec.get("replicas", 1)) for spec in specs.values())


def _metric(trial: dict[str, Any], metric: str) -> bool:
    """True when the trial's observation has `metric` with a value."""
    observation = (trial.get("status") or {}).get("observation") or {}
    for found in observation.get("metrics") or []:
        if found.get("name") == metric and found.get("latest") not in (None, "", UNAVAILABLE):
            return True
    return False


def _failed(trial: dict[str, Any]) -> str | None:
    for condition in (trial.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            return str(condition.get("message") or "Failed")
    return None


def record_trial(
    trials: dict[str, TrialTimes], event_type: str, trial: dict[str, Any], now: float, metric: str
) -> None:
    """Update `trials` (name -> TrialTimes) with one LISTED/ADDED/MODIFIED/DELETED trial seen
    `now`: first seen (its creation, as the watch shows it: the creationTimestamp has whole
    seconds only), first seen with `metric` observed, failed."""
    name = str((trial.get("metadata") or {}).get("name", ""))
    times = trials.setdefault(name, TrialTimes(name=name, created=now))
    if times.collected is None and _metric(trial, metric):
        times.collected = now
    times.failed = times.failed or _failed(trial)


def all_running(pods: Iterable[PodTimes], job: str, replicas: int) -> float | None:
    """When the last of `job`'s `replicas` pods was first seen Running (None until each has
    been; a pod made again counts from its first)."""
    first: dict[str, float] = {}
    for pod in pods:
        if pod.job == job and pod.running is not None:
            first[pod.name] = min(pod.running, first.get(pod.name, pod.running))
    return max(first.values()) if len(first) >= replicas else None


def first_step_at(log: str) -> float | None:
    """The wall-clock time (epoch seconds) of the earliest FIRST_STEP line of a pod's log as
    `kubectl logs --timestamps --all-containers` prints it (each line: the kubelet's RFC 3339
    stamp, a space, the line; one container after the other)."""
    stamps = []
    for line in log.splitlines():
        stamp, _, text = line.partition(" ")
        if FIRST_STEP in text:
            try:
                stamps.append(datetime.fromisoformat(stamp).timestamp())
            except ValueError:
                continue  # not a stamped line
    return min(stamps, default=None)


def trial_run(
    controller: str,
    round_: int,
    times: TrialTimes,
    running: float | None,
    first_step: float | None,
    wall_offset: float,
) -> TrialRun:
    """The figures of one trial: `running` on the watch's clock, `first_step` on the wall
    clock (`wall_offset` = wall - monotonic); an error when a moment is missing."""
    run = TrialRun(controller=controller, round=round_, trial=times.name)
    if running is not None:
        run.running_s = running - times.created
    if first_step is not None:
        run.first_step_s = first_step - wall_offset - times.created
    if times.collected is not None:
        run.collected_s = times.collected - times.created
    missing = [f for f in ("running_s", "first_step_s", "collected_s") if getattr(run, f) is None]
    if times.failed:
        run.error = f"the trial Failed: {times.failed}"
    elif missing:
        run.error = f"not measured: {', '.join(missing)}"
    return run
