"""A parameter server dies under TensorFlow 2's ParameterServerStrategy (real processes, a real
SIGKILL): the coordinator stops with the retryable code 138 without saving anything after the
loss, and once the PS and the coordinator are started again (what ``restartPolicy: ExitCode``
does) the job resumes from the last checkpoint (no step past it is lost) and finishes with a
real accuracy.

The operator recreates a coordinator each time it exits with a retryable code, and so does this
test (at most ``RESTARTS`` times): a worker that saw the PS die can still hold its gRPC channel
in reconnect back-off for a moment after the new PS listens, and a coordinator that reaches it
then fails with 138 again (seen once under CI load, not on an idle machine)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.trainer.trainer_harness import LocalCluster

pytestmark = [pytest.mark.tensorflow, pytest.mark.slow]

DIGITS = ["examples/keras_digits/keras_digits.py"]
STEPS, INTERVAL = 1500, 100
RESTARTS = 3  # coordinator restarts allowed after the PS is back (a backoffLimit)
RETRYABLE = 138


def _digits(tmp_path: Path, workers: int, steps: int) -> LocalCluster:
    """keras_digits under ParameterServerStrategy: a chief, a PS and `workers` workers."""
    return LocalCluster(
        DIGITS,
        tmp_path / "logs",
        {"chief": 1, "ps": 1, "worker": workers},
        env={
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TF_MAX_STEPS": str(steps),
            "TAAS_BATCH_SIZE": "64",
            "TAAS_SAVE_CHECKPOINTS_STEPS": str(INTERVAL),
            "TAAS_LOG_EVERY_STEPS": "50",
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
        },
    )


@pytest.mark.timeout(400)
def test_a_dead_ps_stops_the_coordinator_and_the_job_resumes(tmp_path: Path) -> None:
    cluster = _digits(tmp_path, workers=1, steps=STEPS)
    try:
        cluster.start_all()
        cluster.wait_for_line("chief:0", "] step 250 global", 180)  # two checkpoints by then
        cluster.kill("ps:0")
        code = cluster.tasks["chief:0"].proc.wait(120)
        first_run = cluster.tasks["chief:0"].text()
        assert code == 138, cluster.logs()
        last_saved = max(int(s) for s in re.findall(r"saved checkpoint ckpt-(\d+)", first_run))
        # The PS and the coordinator come back (the operator recreates both pods).
        cluster.start("ps", 0)
        cluster.start("chief", 0)
        for _ in range(RESTARTS):
            if cluster.tasks["chief:0"].proc.wait(300) != RETRYABLE:
                break
            cluster.start("chief", 0)
        codes = cluster.wait(300)
        assert codes == {"chief:0": 0, "ps:0": 0, "worker:0": 0}, cluster.logs()
        chief = cluster.tasks["chief:0"].text()
        found = re.findall(r"resuming from checkpoint \S+ckpt-(\d+) \(global step (\d+)\)", chief)
        # The first run after the loss resumes from the last checkpoint saved before it; a run
        # that failed again before saving leaves the next one the same checkpoint.
        names = [int(name) for name, _ in found]
        assert names[0] == last_saved and names == sorted(names), cluster.logs()
        # Asynchronous steps still in flight may reach the PS while the save is written: the
        # checkpoint can hold a few more updates than its name (the in-flight window, 4 here).
        resumed = int(found[0][1])
        assert last_saved <= resumed <= last_saved + 5, found
        assert f"global step {STEPS}" in chief
        accuracy = float(re.findall(r"test accuracy: ([0-9.]+)", chief)[-1])
        assert accuracy > 0.9
    finally:
        cluster.close()


@pytest.mark.timeout(400)
def test_a_silent_worker_does_not_stall_the_coordinator(tmp_path: Path) -> None:
    """A worker that stops answering (SIGSTOP: its sockets stay open and nothing comes back, as
    from a node powered off) fails the coordinator's calls to it once a keepalive ping goes
    unanswered (`taas.runtime.keepalive`), and the other worker carries the training to its
    end. Without the keepalive the coordinator waits on that worker for as long as it is
    silent: here, for ever."""
    steps = 600
    cluster = _digits(tmp_path, workers=2, steps=steps)
    try:
        cluster.start_all()
        cluster.wait_for_line("chief:0", "] step 100 global", 180)
        os.killpg(cluster.tasks["worker:1"].proc.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        cluster.wait_for_line("chief:0", "] step 150 global", 240)
        print(f"\nstep 150 came {time.monotonic() - stopped:.1f}s after worker 1 went silent")
        try:
            code = cluster.tasks["chief:0"].proc.wait(240)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the coordinator stalled; logs:\n{cluster.logs()}") from None
        assert code == 0, cluster.logs()
        chief = cluster.tasks["chief:0"].text()
        assert f"global step {steps}" in chief, cluster.logs()
        accuracy = float(re.findall(r"test accuracy: ([0-9.]+)", chief)[-1])
        assert accuracy > 0.9
    finally:
        cluster.close()  # SIGKILL ends the stopped worker too
