"""Progress lines, with a fake clock."""

from __future__ import annotations

import io

import pytest

from taas.core.progress_log import ProgressReporter, checkpoint_step, nothing_to_train

pytestmark = pytest.mark.fast


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


def test_nothing_to_train_line_chief_and_workers() -> None:
    chief = nothing_to_train("worker:0", 300, 300, "/tmp/m", True, "/tmp/m/model.ckpt-300")
    assert chief == (
        "[worker:0] model dir /tmp/m already at global step 300 >= max_steps 300: nothing to "
        "train (resumed from checkpoint). Delete the directory or raise TF_MAX_STEPS (max_steps) "
        "to train again."
    )
    # A worker seeing the finished checkpoint (shared model dir) says the same.
    worker = nothing_to_train("worker:1", 300, 300, "/tmp/m", False, "/tmp/m/model.ckpt-300")
    assert worker == chief.replace("worker:0", "worker:1")
    # Without it (own file system, or the others just finished first) it does not claim a resume.
    late = nothing_to_train("worker:1", 300, 300, "/tmp/m", False, "/tmp/m/model.ckpt-120")
    assert "when this task joined: nothing to train" in late and "TF_MAX_STEPS" in late
    assert checkpoint_step(None) is None and checkpoint_step("/a/model.ckpt-7") == 7


def test_progress_line_shows_the_latest_metrics_after_the_loss() -> None:
    """Keras fit's compiled metrics per step, its validation metrics at an epoch's end (noted
    between steps), each the latest value, in the order first seen."""
    out = io.StringIO()
    reporter = ProgressReporter("local", 10, 1, 2, 0.0, out, clock=lambda: 1.0)
    reporter.step(1, loss=0.5, metrics={"accuracy": 0.75})
    reporter.note({"val_loss": 0.625})
    reporter.step(2, loss=0.25, metrics={"accuracy": 0.875})
    (line,) = out.getvalue().splitlines()
    assert " loss 0.2500 accuracy 0.875 val_loss 0.625 | " in line


def test_a_held_line_is_printed_at_release_with_what_was_noted_since() -> None:
    """An epoch's last step holds its due line; the epoch's validation is noted, then the line
    is released once; a release with nothing held prints nothing, unless forced with steps
    since the last line."""
    out = io.StringIO()
    reporter = ProgressReporter("local", 10, 1, 2, 0.0, out, clock=lambda: 1.0)
    reporter.step(1, loss=0.5)
    reporter.step(2, loss=0.25, hold=True)
    assert out.getvalue() == "" and reporter.held
    reporter.note({"val_loss": 0.375})
    reporter.release(2)
    reporter.release(2)
    (line,) = out.getvalue().splitlines()
    assert "step 2 global 2/10 loss 0.2500 val_loss 0.375 | " in line and not reporter.held
    reporter.step(3, loss=0.125, hold=True)  # not due (every 2 steps): nothing held
    reporter.release(3)
    assert len(out.getvalue().splitlines()) == 1
    reporter.release(3, force=True)
    assert "step 3 global 3/10 loss 0.1250 val_loss 0.375 | " in out.getvalue().splitlines()[-1]
