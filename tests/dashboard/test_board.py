"""A job page's problem: each watch (the TFJob, its pods, its events) reports its own, and the
page names the TFJob's first, whichever watch was refused last; a watch that recovers clears
only its own problem."""

from __future__ import annotations

import pytest

from taas_operator.dashboard.board import JobWatch

pytestmark = pytest.mark.fast


def test_the_tfjob_problem_is_named_before_the_pods_problem_whatever_the_order() -> None:
    watch = JobWatch("ns", "job")
    wake = watch.subscribe()
    wake.clear()
    watch.set_problem("this TFJob", "You may not read this TFJob")
    assert wake.is_set()
    watch.set_problem("its pods", "You may not read its pods")
    assert watch.problem == "You may not read this TFJob"
    wake.clear()
    watch.set_problem("this TFJob", None)
    assert watch.problem == "You may not read its pods"
    assert wake.is_set()
    watch.set_problem("its events", "You may not read its events")
    assert watch.problem == "You may not read its pods"
    watch.set_problem("its pods", None)
    watch.set_problem("its events", None)
    assert watch.problem is None


def test_an_unchanged_problem_does_not_wake_the_page() -> None:
    watch = JobWatch("ns", "job")
    watch.set_problem("this TFJob", "refused")
    wake = watch.subscribe()
    wake.clear()
    watch.set_problem("its pods", "refused too")  # hidden behind the TFJob's
    watch.set_problem("this TFJob", "refused")
    assert not wake.is_set()
