"""What ``session`` is in graph mode's ``train(session, global_step, is_chief)``, and how to read
the global step in it (docs/trainer.md, "session, global_step, is_chief")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.trainer.trainer_harness import run_program

pytestmark = pytest.mark.tensorflow

READER = ["tests/trainer/programs/global_step_reader.py"]


def reader_env(tmp_path: Path, read_with: str) -> dict[str, str]:
    return {
        "READ_WITH": read_with,
        "TAAS_MODEL_DIR": str(tmp_path / "model"),
        "TF_MAX_STEPS": "5",
        "TAAS_SAVE_SUMMARIES_STEPS": "1",
    }


@pytest.mark.timeout(120)
def test_session_run_of_global_step_fails_on_a_summary_step(tmp_path: Path) -> None:
    """The session is a MonitoredSession: the chief's summary hook joins every run, and its
    loss summary needs the placeholders: the failure users met."""
    done = run_program(READER, reader_env(tmp_path, "session"))
    assert done.returncode == 1, done.stdout + done.stderr
    # x or y: TensorFlow names whichever unfed placeholder it meets first
    assert re.search("You must feed a value for placeholder tensor '[xy]'", done.stderr)


@pytest.mark.timeout(120)
def test_read_global_step_reads_it_past_the_hooks(tmp_path: Path) -> None:
    done = run_program(READER, reader_env(tmp_path, "helper"))
    assert done.returncode == 0, done.stdout + done.stderr
    steps = [line for line in done.stdout.splitlines() if line.startswith("STEP ")]
    assert steps == [f"STEP {n}" for n in range(1, 6)], done.stdout
