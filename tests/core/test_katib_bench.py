"""bench.katib's own judgements, without a cluster: a trial's creation is when the watch first
showed it and its metric is collected only once Katib wrote a value; the chief's first step is
the earliest stamped "first step done" line of its pod's containers, brought onto the watch's
clock; a trial's pods are all Running only once each replica's pod has been; a moment missing
or a failed trial is an error, never a figure; the table's medians leave errored runs out."""

from __future__ import annotations

from typing import Any

import yaml

from bench.harness.clock import PodTimes
from bench.harness.contest import median, turns
from bench.katib.__main__ import EXAMPLE, report
from bench.katib.trials import (
    TrialRun,
    TrialTimes,
    all_running,
    experiment,
    first_step_at,
    record_trial,
    replicas,
    trial_run,
)


def _trial(name: str, metrics: list[dict[str, str]] | None = None, **status: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(status)
    if metrics is not None:
        body["observation"] = {"metrics": metrics}
    return {"metadata": {"name": name}, "status": body}


def test_a_trial_is_created_when_first_seen_and_collected_when_its_metric_has_a_value() -> None:
    trials: dict[str, TrialTimes] = {}

    def seen(now: float, name: str = "loss", latest: str | None = None) -> None:
        metrics = None if latest is None else [{"name": name, "latest": latest}]
        record_trial(
            trials, "ADDED" if not trials else "MODIFIED", _trial("t1", metrics), now, "loss"
        )

    seen(10.0)
    seen(20.0, latest="unavailable")  # Katib's word for "the collector reported none"
    seen(21.0, "accuracy", "0.9")  # another metric
    assert trials["t1"].collected is None
    seen(30.0, latest="1.5e-03")
    seen(31.0, latest="1.4e-03")
    assert (trials["t1"].created, trials["t1"].collected) == (10.0, 30.0)
    assert trials["t1"].failed is None


def test_a_failed_trial_keeps_its_message() -> None:
    trials: dict[str, TrialTimes] = {}
    failed = {"type": "Failed", "status": "True", "message": "Trial has failed. Job message: x"}
    record_trial(trials, "ADDED", _trial("t2"), 1.0, "loss")
    record_trial(trials, "MODIFIED", _trial("t2", conditions=[failed]), 5.0, "loss")
    run = trial_run("taas", 0, trials["t2"], 3.0, None, 0.0)
    assert run.error == "the trial Failed: Trial has failed. Job message: x"


LOG = """\
2026-11-27T22:10:01.500000000Z learning rate 0.1
2026-11-27T22:10:09.250000000Z I1127 22:10:09.249   1 main.go:144] [worker:0] first step done 3.21s after start
not a stamped line with first step done in it
2026-11-27T22:10:05.125000000Z [worker:0] first step done 3.20s after start
2026-11-27T22:10:12.000000000Z loss=1.5e-03
"""  # noqa: E501


def test_the_first_step_is_the_earliest_stamped_line_of_any_container() -> None:
    assert first_step_at(LOG) == 1795817405.125  # 2026-11-27T22:10:05.125Z
    assert first_step_at("2026-11-27T22:10:01Z learning rate 0.1\n") is None
    assert first_step_at("") is None


def test_the_first_step_is_put_on_the_watchs_clock() -> None:
    times = TrialTimes(name="t", created=100.0, collected=130.0)
    wall_offset = 1795817405.125 - 112.5  # the chief's line came 12.5 s after the creation
    run = trial_run("kubeflow", 1, times, 104.0, first_step_at(LOG), wall_offset)
    assert (run.running_s, run.first_step_s, run.collected_s) == (4.0, 12.5, 30.0)
    assert run.error is None


def test_a_missing_moment_is_an_error_not_a_figure() -> None:
    run = trial_run("taas", 0, TrialTimes(name="t", created=1.0), 2.0, None, 0.0)
    assert run.error == "not measured: first_step_s, collected_s"
    assert median([run], "running_s") is None


def _pod(name: str, job: str, running: float | None) -> PodTimes:
    uid = f"{name}-{running}"
    return PodTimes(name=name, uid=uid, job=job, replica_type="", seen=0.0, running=running)


def test_the_pods_are_all_running_when_each_replica_has_been() -> None:
    pods = [_pod("t-ps-0", "t", 5.0), _pod("t-worker-0", "t", None), _pod("u-ps-0", "u", 1.0)]
    assert all_running(pods, "t", 2) is None
    pods += [_pod("t-worker-0", "t", 7.0), _pod("t-worker-0", "t", 9.0)]  # made again: its first
    assert all_running(pods, "t", 2) == 7.0


def test_the_example_is_cut_to_the_trials_asked_for() -> None:
    example = yaml.safe_load(EXAMPLE.read_text())
    one = experiment(example, 1, 2)
    assert (one["spec"]["maxTrialCount"], one["spec"]["parallelTrialCount"]) == (1, 1)
    three = experiment(example, 3, 2)
    assert (three["spec"]["maxTrialCount"], three["spec"]["parallelTrialCount"]) == (3, 2)
    assert example["spec"]["maxTrialCount"] == 4  # the example itself unchanged
    assert replicas(three) == 2  # 1 PS + 1 worker


def test_the_table_gives_medians_without_the_errored_trials_and_the_ratio() -> None:
    def run(controller: str, first: float, error: str | None = None) -> TrialRun:
        return TrialRun(
            controller=controller, round=0, trial="t", running_s=1.0, first_step_s=first,
            collected_s=2 * first, error=error,
        )  # fmt: skip

    runs = [run("taas", 10.0), run("taas", 12.0), run("taas", 1.0, "the trial Failed: x")]
    runs += [run("kubeflow", 20.0), run("kubeflow", 22.0)]
    runs.append(TrialRun(controller="kubeflow", round=0, trial="-", error="not ended"))
    assert median([r for r in runs if r.controller == "taas"], "first_step_s") == 11.0
    lines = report(runs).splitlines()
    assert lines[1].split()[-3:] == ["1.00", "1.00", "1.00x"]  # pods Running
    assert lines[2].split()[-3:] == ["11.0", "21.0", "0.52x"]  # first training step
    assert lines[3].split()[-3:] == ["22.0", "42.0", "0.52x"]  # metric collected
    assert lines[4] == "trials: 5, failed: 2"


def test_the_controllers_take_turns_going_first() -> None:
    assert turns(0) == ("taas", "kubeflow")
    assert turns(1) == ("kubeflow", "taas")
