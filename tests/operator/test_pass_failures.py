"""A pass that fails on one job is reported on that job (issue 39): a number no check bounded
(stored while an older CRD was installed) fails the job with the field named, and anything
else a pass raises fails it with reason ReconcileFailed and a Warning event, once, instead of
a retry for ever that nobody sees. Other jobs go on. In-memory apiserver, the Controller in
this process (no CRD validation there: the job is stored as an older CRD would have)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from taas_operator.controller.reconcile import reconciler
from tests.harness.operator_run import (
    Api,
    StartOperator,
    condition,
    new_namespace,
    tfjob,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.fast, pytest.mark.timeout(120)]


def _warnings(api: Api, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in api.events(ns, name) if e["reason"] == reason]


def test_an_unbounded_deadline_fails_the_job_naming_the_field(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    ns = new_namespace(fake_admin, "bound")
    name = unique("deadline")
    job = tfjob(name, {"Worker": {}}, runPolicy={"activeDeadlineSeconds": 2**63 - 1})
    fake_admin.create_tfjob(ns, job)
    start_fake_operator(ns)
    failed = wait(lambda: condition(fake_admin.tfjob(ns, name), "Failed"), "Failed")
    assert failed["reason"] == "InvalidTFJobSpec"
    assert "spec.runPolicy.activeDeadlineSeconds" in failed["message"]
    assert "less than or equal to 2147483647" in failed["message"]
    wait(lambda: _warnings(fake_admin, ns, name, "InvalidTFJobSpec"), "its event")
    assert fake_admin.pods(ns, name) == {}


def test_a_pass_that_raises_fails_that_job_once(
    fake_admin: Api, start_fake_operator: StartOperator, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = new_namespace(fake_admin, "raise")
    broken, sound = unique("broken"), unique("sound")
    planned = reconciler.plan_job
    calls: list[str] = []

    def plan_job(job: Any, *args: Any, **kwargs: Any) -> Any:
        if job.name == broken:
            calls.append(job.name)
            raise OverflowError("date value out of range")
        return planned(job, *args, **kwargs)

    monkeypatch.setattr(reconciler, "plan_job", plan_job)
    fake_admin.create_tfjob(ns, tfjob(broken, {"Worker": {}}))
    fake_admin.create_tfjob(ns, tfjob(sound, {"Worker": {}}))
    start_fake_operator(ns)
    failed = wait(lambda: condition(fake_admin.tfjob(ns, broken), "Failed"), "Failed")
    assert failed["reason"] == "ReconcileFailed"
    assert "OverflowError: date value out of range" in failed["message"]
    assert "fix:" in failed["message"]
    events = wait(lambda: _warnings(fake_admin, ns, broken, "ReconcileFailed"), "event")
    assert events[0]["type"] == "Warning"
    wait(lambda: len(fake_admin.pods(ns, sound)) == 1, "the other job's pod")
    time.sleep(2)  # a retrying work queue would have run it again several times by now
    # Not retried: the pass after the Failed write (its clean-up) is the last one.
    assert len(calls) <= 2, calls
    assert len(_warnings(fake_admin, ns, broken, "ReconcileFailed")) == 1


def test_a_job_over_the_byte_budget_fails_before_any_pod(
    fake_admin: Api, start_fake_operator: StartOperator
) -> None:
    """--max-job-bytes: the estimate (`planner.budget`) is checked before any pod is made."""
    ns = new_namespace(fake_admin, "bytes")
    big, small = unique("big"), unique("small")
    fake_admin.create_tfjob(ns, tfjob(big, {"PS": {}, "Worker": {"replicas": 20}}))
    fake_admin.create_tfjob(ns, tfjob(small, {"Worker": {}}))
    start_fake_operator(ns, args=("--max-job-bytes", "50000"))
    failed = wait(lambda: condition(fake_admin.tfjob(ns, big), "Failed"), "Failed")
    assert failed["reason"] == "JobTooLarge"
    assert "21 pods and as many services" in failed["message"]
    assert "over the limit of 48.8 KiB" in failed["message"]
    assert "fix:" in failed["message"]
    wait(lambda: _warnings(fake_admin, ns, big, "JobTooLarge"), "its event")
    wait(lambda: len(fake_admin.pods(ns, small)) == 1, "the small job's pod")
    assert fake_admin.pods(ns, big) == {} and fake_admin.services(ns, big) == {}
