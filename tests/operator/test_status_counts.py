"""Write cost (issue 22): a change of the replica counts alone is written once the moves held
add up to a quarter of the job's replicas, or 10 s after the first one held; a transition
(a condition, a recreation, start or completion) at once, and the count that shows every
replica up; a small job (ten replicas or fewer) always at once. Pure checks of the rule,
then the operator on the in-memory apiserver: a held count is written later without another
event. All in the fast tier."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from taas_operator.api import TFJobStatus
from taas_operator.controller.reconcile.status import COUNTS_HOLD_S, StatusWriter
from taas_operator.planner import counts_only_change
from tests.harness.operator_run import (
    Api,
    StartOperator,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.fast

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
KEY = ("ns", "job")


def status(active: int = 0, succeeded: int = 0, **extra: Any) -> TFJobStatus:
    return TFJobStatus.model_validate(
        {"replicaStatuses": {"Worker": {"active": active, "succeeded": succeeded}}, **extra}
    )


def writer() -> StatusWriter:
    nothing = cast(Any, None)
    return StatusWriter(nothing, nothing, nothing, nothing, nothing)


def test_counts_only_change_counts_the_moves_and_nothing_else() -> None:
    assert counts_only_change(status(0), status(3)) == 3
    assert counts_only_change(status(3, 0), status(1, 2)) == 4
    assert counts_only_change(status(2), status(2)) == 0
    started = status(1, startTime="2025-01-01T12:00:00Z")
    assert counts_only_change(status(0), started) is None  # the start time is news
    running = status(
        3,
        conditions=[
            {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "m"}
        ],
    )
    assert counts_only_change(status(2), running) is None


def test_a_big_jobs_counts_wait_for_a_quarter_of_its_replicas_or_ten_seconds() -> None:
    statuses = writer()
    hold = timedelta(seconds=COUNTS_HOLD_S)
    # 100 replicas: fewer than 25 moves are held, from the first one held
    assert statuses.hold_until(KEY, status(0), status(4), 100, T0) == T0 + hold
    later = T0 + timedelta(seconds=2)
    assert statuses.hold_until(KEY, status(0), status(24), 100, later) == T0 + hold
    assert statuses.hold_until(KEY, status(0), status(25), 100, later) is None  # a quarter
    # held again from scratch; at the end of the hold, written
    assert statuses.hold_until(KEY, status(25), status(26), 100, later) == later + hold
    assert statuses.hold_until(KEY, status(25), status(27), 100, later + hold) is None


def test_transitions_and_small_jobs_are_written_at_once() -> None:
    statuses = writer()
    assert statuses.hold_until(KEY, status(0), status(1), 10, T0) is None  # small job
    assert statuses.hold_until(KEY, status(0), status(1), 11, T0) is not None
    finished = status(
        0,
        100,
        conditions=[
            {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "m"}
        ],
    )
    assert statuses.hold_until(KEY, status(99, 1), finished, 100, T0) is None
    assert statuses.hold_until(KEY, status(98, 1), status(99, 1), 100, T0) is None  # all up
    # all up already, workers ending one by one: held
    assert statuses.hold_until(KEY, status(99, 1), status(98, 2), 100, T0) is not None
    assert statuses.hold_until(("ns", "other"), status(0), status(1), 100, T0) is not None
    statuses.forget_job(("ns", "other"))  # the job is gone: a new one starts afresh
    assert statuses.hold_until(
        ("ns", "other"), status(0), status(1), 100, T0 + timedelta(seconds=4)
    ) == T0 + timedelta(seconds=4 + COUNTS_HOLD_S)


@pytest.mark.timeout(120)
def test_a_held_count_is_written_later_without_another_event(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "held")
    operator = start_fake_operator(ns, args=("--log-level", "DEBUG"))
    name = unique("wide")
    fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {"replicas": 20}}))
    wait(lambda: len(fake_admin.pods(ns, name)) == 20, "20 pods")

    def active() -> int:
        job = fake_admin.tfjob(ns, name) or {}
        counts = (job.get("status") or {}).get("replicaStatuses", {}).get("Worker", {})
        return int(counts.get("active", 0))

    # the first running worker makes the job Running (Kubeflow's rule without a chief): a
    # transition, written at once
    fake_admin.set_pod_phase(ns, f"{name}-worker-3", "Running")
    wait(lambda: active() == 1, "the job Running, 1 active")
    held = f"{ns}/{name}: replica counts held until "
    assert held not in operator.log()
    fake_admin.set_pod_phase(ns, f"{name}-worker-4", "Running")  # 1 of 20 moved: held
    wait(lambda: held in operator.log(), "the count held")
    assert active() == 1
    wait(lambda: active() == 2, "the held count written", timeout=30)
    # five more at once reach a quarter of 20: written by the pass they start
    passes = operator.log().count(held)
    for index in range(5, 10):
        fake_admin.set_pod_phase(ns, f"{name}-worker-{index}", "Running")
    wait(lambda: active() == 7, "7 active", timeout=30)
    assert operator.log().count(held) - passes <= 4  # at most the first four were held
