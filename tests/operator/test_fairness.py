"""Fairness between namespaces: one namespace's burst of TFJobs does not starve another's.

The work queue gives namespaces with work turns (`workqueue`, `--namespace-weight`), and a
namespace has at most `--creating-per-namespace` jobs being created at once, the next waiting
with a condition naming why (`reconcile.creating`). Pure parts on their own; the rest on the
in-memory apiserver (the operator's Controller in this process). Orders and counts, never
wall time (speed figures are bench/operator's fairness scenario).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from datetime import UTC, datetime

import pytest

from taas_operator.api import parse_tfjob
from taas_operator.api.constants import REASON_NAMESPACE_CREATION_LIMIT
from taas_operator.api.models import TFJobStatus
from taas_operator.controller import metrics
from taas_operator.controller.flags import UsageError, add_arguments, settings_from_args
from taas_operator.controller.reconcile.creating import CreationSlots
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.planner import Plan
from tests.harness.operator_run import (
    PODS,
    Api,
    StartOperator,
    new_namespace,
    tfjob,
)
from tests.harness.waiting import wait

pytestmark = pytest.mark.fast


def _served(keys: list[tuple[str, int]], weights: dict[str, int] | None = None) -> list[Hashable]:
    """The order one worker passes over `keys`, all requested before it starts."""

    async def scenario() -> list[Hashable]:
        order: list[Hashable] = []
        done = asyncio.Event()

        async def run_pass(key: Hashable) -> datetime | None:
            order.append(key)
            if len(order) == len(keys):
                done.set()
            return None

        def group(key: Hashable) -> Hashable:
            assert isinstance(key, tuple)
            return key[0]

        queue = WorkQueue(
            run_pass,
            max_running=1,
            group=group,
            weight=lambda ns: (weights or {}).get(str(ns), 1),
        )
        for key in keys:
            queue.request(key)
        await asyncio.wait_for(done.wait(), 10)
        await queue.close()
        return order

    return asyncio.run(scenario())


def test_a_namespace_burst_does_not_delay_another_namespace() -> None:
    """300 keys of namespace a, then one of b: b's pass is the second, not the 301st; a's
    keys keep their own order."""
    keys = [("a", i) for i in range(300)] + [("b", 0)]
    order = _served(keys)
    assert order.index(("b", 0)) == 1
    assert [k for k in order if k[0] == "a"] == keys[:300]


def test_namespaces_take_turns_by_weight() -> None:
    """Weight 3 for a: three of a's keys per turn, then one of b's, then of c's."""
    keys = [("a", i) for i in range(6)] + [("b", i) for i in range(3)] + [("c", 0)]
    order = _served(keys, {"a": 3})
    assert [k[0] for k in order] == list("aaabcaaabb")


def test_a_namespace_back_after_its_queue_emptied_waits_its_turn() -> None:
    """Without groups (one group) the queue is first come first served, as before."""

    async def scenario() -> list[Hashable]:
        order: list[Hashable] = []

        async def run_pass(key: Hashable) -> datetime | None:
            order.append(key)
            return None

        queue = WorkQueue(run_pass, max_running=1)
        for key in [("a", 0), ("a", 1), ("b", 0)]:
            queue.request(key)
        for _ in range(20):
            await asyncio.sleep(0)
        await queue.close()
        return order

    assert asyncio.run(scenario()) == [("a", 0), ("a", 1), ("b", 0)]


def test_weights_are_checked_naming_the_flag() -> None:
    parser = add_arguments(__import__("argparse").ArgumentParser())
    args = parser.parse_args(["--namespace-weight", "team-a=4", "--namespace-weight", "b=1"])
    assert settings_from_args(args).weights == {"team-a": 4, "b": 1}
    for bad in ("team-a", "team-a=0", "team-a=101", "=3", "team-a=x"):
        with pytest.raises(UsageError, match="--namespace-weight"):
            settings_from_args(parser.parse_args(["--namespace-weight", bad]))


def _plan(name: str) -> tuple[object, Plan]:
    body = tfjob(name, {"Worker": {}})
    body["metadata"].update(namespace="a", uid=f"uid-{name}")
    job = parse_tfjob(body)
    return job, Plan(status=TFJobStatus(), create_pods=[{"metadata": {"name": f"{name}-0"}}])


def test_jobs_past_the_limit_wait_with_a_condition_and_are_woken_in_order() -> None:
    """Limit 2: the third and fourth jobs of a namespace make nothing and say why; each job
    whose pods are all made wakes the next waiting one; another namespace is not held."""
    requested: list[tuple[str, str]] = []
    slots = CreationSlots(2, requested.append)
    now = datetime.now(UTC).replace(microsecond=0)
    plans = {name: _plan(name) for name in ("j1", "j2", "j3", "j4")}
    for name in ("j1", "j2", "j3", "j4"):
        job, plan = plans[name]
        allowed = slots.gate(("a", name), job, plan, now)  # type: ignore[arg-type]
        assert allowed is (name in ("j1", "j2"))
    job, plan = plans["j3"]
    assert plan.create_pods == [] and plan.status_changed
    held = plan.status.condition("Running")
    assert held is not None and held.status == "False"
    assert held.reason == REASON_NAMESPACE_CREATION_LIMIT
    assert held.message.startswith("waiting: namespace a has 2 jobs being created")
    assert [e.reason for e in plan.events] == [REASON_NAMESPACE_CREATION_LIMIT]
    sample = metrics.REGISTRY.get_sample_value
    assert sample("taas_operator_jobs_being_created", {"job_namespace": "a"}) == 2
    assert sample("taas_operator_jobs_waiting_to_create", {"job_namespace": "a"}) == 2

    other, other_plan = _plan("b1")
    assert slots.gate(("b", "b1"), other, other_plan, now)  # type: ignore[arg-type]

    # j1's creations failed: it keeps its slot (it retries); nobody is woken
    slots.after(("a", "j1"), plans["j1"][1], now, failed=True)
    assert requested == []
    # j1's next pass made them all: j3 (first come) is woken, not j4
    slots.after(("a", "j1"), plans["j1"][1], now, failed=False)
    assert requested == [("a", "j3")]
    # j3's pass: admitted, its waiting condition removed from the status it writes
    stored = plan.status
    again = Plan(status=stored.model_copy(deep=True), create_pods=[{"metadata": {}}])
    waiting_job = job.model_copy(update={"status": stored})  # type: ignore[attr-defined]
    assert slots.gate(("a", "j3"), waiting_job, again, now)
    assert again.status.condition("Running") is None and again.status_changed
    # a deleted job frees its slot too
    slots.forget(("a", "j2"))
    assert requested == [("a", "j3"), ("a", "j4")]


@pytest.mark.timeout(300)
def test_another_namespace_gets_its_pod_within_the_first_passes(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    """300 one-replica jobs of one namespace and then one of another, all waiting when the
    operator starts: the other namespace's pod is among the first few made, not the 301st."""
    flood, other = new_namespace(fake_admin, "flood"), new_namespace(fake_admin, "other")
    for i in range(300):
        fake_admin.create_tfjob(flood, tfjob(f"f{i}", {"Worker": {}}))
    fake_admin.create_tfjob(other, tfjob("late", {"Worker": {}}))
    start_fake_operator(flood, other)

    def pods() -> list[dict]:  # type: ignore[type-arg]
        return [
            *fake_admin.get(PODS.format(ns=flood))["items"],
            *fake_admin.get(PODS.format(ns=other))["items"],
        ]

    made = wait(lambda: len(p := pods()) == 301 and p, "301 pods", timeout=240)
    order = sorted(made, key=lambda p: int(p["metadata"]["resourceVersion"]))
    rank = [p["metadata"]["namespace"] for p in order].index(other)
    assert rank < 8, f"the other namespace's pod was made {rank + 1}th of 301"


@pytest.mark.timeout(120)
def test_creation_limit_holds_jobs_and_lets_every_one_through(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    """--creating-per-namespace=1 with passes running side by side: jobs that found their
    namespace busy said so (event and condition, then removed), and every job got its pod."""
    ns = new_namespace(fake_admin, "limit")
    names = [f"j{i}" for i in range(8)]
    for name in names:
        fake_admin.create_tfjob(ns, tfjob(name, {"Worker": {}}))
    start_fake_operator(ns, args=("--creating-per-namespace", "1"))
    wait(lambda: all(fake_admin.pods(ns, n) for n in names), "every job's pod", timeout=90)
    held = [
        e["message"]
        for n in names
        for e in fake_admin.events(ns, n)
        if e["reason"] == REASON_NAMESPACE_CREATION_LIMIT
    ]
    assert held, "no job waited: passes did not run side by side"
    assert all(m.startswith(f"waiting: namespace {ns} has 1 jobs being created") for m in held)

    def cleared() -> bool:
        for name in names:
            job = fake_admin.tfjob(ns, name) or {}
            reasons = [c.get("reason") for c in (job.get("status") or {}).get("conditions", [])]
            if REASON_NAMESPACE_CREATION_LIMIT in reasons:
                return False
        return True

    wait(cleared, "no job still says it waits")
