"""Progress lines, with a fake clock."""

from __future__ import annotations

import io

from taas.progress import ProgressReporter


def test_progress_line_has_rates_and_eta() -> None:
    now = [0.0]
    out = io.StringIO()
    reporter = ProgressReporter("worker:1", 100, 50, 10, 0.0, out, clock=lambda: now[0])
    for step in range(1, 21):
        now[0] += 0.5
        reporter.step(global_step=2 * step, loss=1.0 / step)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[1] == (
        "[worker:1] step 20 global 40/100 loss 0.0500 | 100.0 ex/s 0.500 s/batch | ETA 15s"
    )
    assert not reporter.pending


def test_progress_every_seconds() -> None:
    now = [0.0]
    out = io.StringIO()
    reporter = ProgressReporter("local", 10, 1, 0, 2.0, out, clock=lambda: now[0])
    for step in range(1, 6):
        now[0] += 1.0
        reporter.step(step)
    assert len(out.getvalue().splitlines()) == 2
    assert reporter.pending
