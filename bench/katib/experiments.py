"""One Katib Experiment under one TFJob controller on the one-node cluster, timed per trial.

    run_experiment(cluster, controller, round_, experiment, timeout) -> [TrialRun, ...]

A fresh namespace labelled for Katib's collector injection; a Clock (bench.harness.clock) watching
its pods, TFJobs and trials from before the Experiment is applied; the Experiment applied and
followed until it has Succeeded or Failed; then each trial's primary pod's log read for the chief's
first step. The namespace is deleted (and waited for, while the controller still runs) before
returning, so the next controller starts on a cluster without this run's jobs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import uuid
from typing import Any

from bench.harness.clock import JOB_LABEL, Clock, PodTimes
from bench.katib.trials import (
    TrialRun,
    TrialTimes,
    all_running,
    first_step_at,
    record_trial,
    replicas,
    trial_run,
)
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.cluster.katib.config import INJECTION_LABEL
from taas_operator.api.resources import Kind

TRIAL = Kind("kubeflow.org", "v1beta1", "trials")
EXPERIMENT = Kind("kubeflow.org", "v1beta1", "experiments")
#: The label of a TFJob's primary pod (its chief, or worker 0 without one) under both
#: controllers: the pod Katib's webhook gives the collector.
PRIMARY = "training.kubeflow.org/job-role=master"


def run_experiment(
    cluster: Cluster, controller: str, round_: int, experiment: dict[str, Any], timeout: float
) -> list[TrialRun]:
    """Apply `experiment` in a fresh namespace under the running `controller`; one TrialRun
    per trial, and one with the trial "-" when the Experiment itself did not succeed."""
    ns = f"bench-katib-{controller}-{uuid.uuid4().hex[:6]}"
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": ns, "labels": {INJECTION_LABEL: "enabled"}},
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(namespace))
    metric = experiment["spec"]["objective"]["objectiveMetricName"]
    trials: dict[str, TrialTimes] = {}

    def on_trial(event_type: str, trial: dict[str, Any], now: float) -> None:
        record_trial(trials, event_type, trial, now, metric)

    clock = Clock(cluster.kubeconfig, ns, others={TRIAL: on_trial})
    try:
        try:
            clock.start()
        except RuntimeError as err:  # its watches did not list
            return [TrialRun(controller=controller, round=round_, trial="-", error=str(err))]
        wall_offset = time.time() - time.monotonic()
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(experiment))
        failure = _wait_ended(clock, ns, experiment["metadata"]["name"], timeout)
        pods, seen = clock.view(
            lambda pods, _: (list(pods.values()), [dataclasses.replace(t) for t in trials.values()])
        )
        pod_count = replicas(experiment)
        runs = [
            _measure(cluster, ns, controller, round_, times, pods, pod_count, wall_offset)
            for times in sorted(seen, key=lambda t: t.created)
        ]
        if clock.errors:
            failure = failure or f"the watch broke: {clock.errors[0]}"
        if failure:
            runs.append(TrialRun(controller=controller, round=round_, trial="-", error=failure))
        return runs
    finally:
        clock.stop()
        deleted = cluster.kubectl("delete", "namespace", ns, "--timeout=100s", check=False)
        if deleted.returncode != 0:
            print(f"[bench katib] {ns} not deleted: {deleted.stderr.strip()}", file=sys.stderr)


def _wait_ended(clock: Clock, ns: str, name: str, timeout: float) -> str | None:
    """Wait until the Experiment has Succeeded (None) or Failed (its message), or `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, got = clock.request("GET", EXPERIMENT.path(ns, name))
        conditions = (got.get("status") or {}).get("conditions") or [] if status == 200 else []
        done = {c["type"]: c for c in conditions if c.get("status") == "True"}
        if "Succeeded" in done:
            return None
        if "Failed" in done:
            return f"the Experiment Failed: {done['Failed'].get('message', '')}"
        time.sleep(1.0)
    return f"the Experiment had not ended after {timeout:.0f}s"


def _measure(
    cluster: Cluster,
    ns: str,
    controller: str,
    round_: int,
    times: TrialTimes,
    pods: list[PodTimes],
    pod_count: int,
    wall_offset: float,
) -> TrialRun:
    """One trial's figures: its pods from the watch, its first step from its primary pod's log
    (every container's: Katib's StdOut collector sends the program's output to a file and
    prints each line in its own container)."""
    log = cluster.kubectl(
        "logs", "-n", ns, "-l", f"{JOB_LABEL}={times.name},{PRIMARY}",
        "--all-containers", "--timestamps", "--tail=-1", check=False,
    )  # fmt: skip
    return trial_run(
        controller,
        round_,
        times,
        all_running(pods, times.name, pod_count),
        first_step_at(log.stdout),
        wall_offset,
    )
