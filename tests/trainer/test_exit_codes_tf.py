"""TensorFlow's own errors classified (in process), and a MultiWorkerMirroredStrategy peer lost
at the end barrier (real processes): the survivor, which had finished training and saved,
exits 0 or retryable, never 1 (a CI run on a loaded machine once called that a bug)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from taas.core.exit_codes import ExitCode, classify
from tests.trainer.trainer_harness import LocalCluster

pytestmark = pytest.mark.tensorflow

HEARTBEAT = (
    "Task /job:worker/replica:0/task:1 heartbeat timeout. This indicates that the remote task "
    "has failed, got preempted, or crashed unexpectedly."
)


def test_tensorflows_errors_for_a_lost_peer_are_retryable_and_a_models_are_not() -> None:
    from tensorflow.python.framework import errors_impl as errors

    lost = [
        errors.UnavailableError(None, None, HEARTBEAT),
        errors.FailedPreconditionError(
            None, None, "Agent must be in CONNECTED state. It is currently in ERROR."
        ),
        errors.InternalError(None, None, f"Barrier failed: UNAVAILABLE: {HEARTBEAT}"),
        errors.UnknownError(None, None, "Coordination service has been shut down."),
        errors.DeadlineExceededError(None, None, "Barrier timed out. Id: taas_training_end."),
    ]
    for exc in lost:
        assert classify(exc) == ExitCode.PEER_LOST, exc
    wrapped = RuntimeError("saving failed")
    wrapped.__cause__ = lost[0]
    assert classify(wrapped) == ExitCode.PEER_LOST
    bugs = [
        errors.InvalidArgumentError(None, None, "Incompatible shapes: [32,10] vs. [32,1]"),
        errors.FailedPreconditionError(None, None, "Coordination service is not enabled."),
        ValueError("heartbeat timeout"),  # not TensorFlow's: the user's own
    ]
    for exc in bugs:
        assert classify(exc) == ExitCode.USER_ERROR, exc


def _lost_at_end(tmp_path: Path, lost: str) -> LocalCluster:
    """Two MWMS workers of 20 steps (a checkpoint every 10); `lost` stops (SIGSTOP) at the
    end barrier, after its final checkpoint (tests/trainer/programs/lost_at_end.py)."""
    return LocalCluster(
        ["tests/trainer/programs/lost_at_end.py"],
        tmp_path / "logs",
        {"worker": 2},
        env={
            "TAAS_MODEL_DIR": str(tmp_path / "model"),
            "TF_MAX_STEPS": "20",
            "TAAS_SAVE_CHECKPOINTS_STEPS": "10",
            "TAAS_STARTUP_TIMEOUT_SECS": "120",
            "LOST_AT_END": lost,
        },
    )


@pytest.mark.timeout(300)
def test_a_peer_lost_at_the_end_barrier_leaves_its_finished_peer_done(tmp_path: Path) -> None:
    """worker:1 stops (SIGSTOP) at the end barrier, after its final checkpoint: no heartbeat
    reaches the coordination service in worker:0, whose barrier fails; worker:0 had finished
    and saved, so it exits 0 (the job is done: its checkpoint is the final one)."""
    cluster = _lost_at_end(tmp_path, "worker:1")
    try:
        cluster.start_all()
        cluster.wait_for_line("worker:1", "LOST ", 200)
        chief = cluster.tasks["worker:0"]
        code = chief.proc.wait(120)
        assert code == 0, cluster.logs()
        assert "a peer was lost after training finished" in chief.text(), cluster.logs()
        assert (tmp_path / "model" / "ckpt-20.index").exists(), cluster.logs()
    finally:
        os.kill(cluster.tasks["worker:1"].proc.pid, signal.SIGKILL)
        cluster.close()


@pytest.mark.timeout(300)
def test_the_coordination_leader_lost_at_the_end_leaves_its_peer_done_or_retryable(
    tmp_path: Path,
) -> None:
    """worker:0, which hosts the coordination service, stops at the end barrier and is then
    killed (its node lost): worker:1, finished, exits 0 or retryable, never 1."""
    cluster = _lost_at_end(tmp_path, "worker:0")
    try:
        cluster.start_all()
        cluster.wait_for_line("worker:0", "LOST ", 200)
        os.kill(cluster.tasks["worker:0"].proc.pid, signal.SIGKILL)
        code = cluster.tasks["worker:1"].proc.wait(120)
        assert code == 0 or code >= 128, cluster.logs()
    finally:
        cluster.close()
