"""A user's mistake ends a real trainer process with a permanent exit code and a message
naming what to fix, never a TensorFlow traceback: an unwritable ``model_dir`` and a misspelt
``TAAS_*`` variable (exit 2, before any graph is built), a loss that turns NaN (exit 3,
stopped at that step: no later step, no checkpoint of the bad weights, no ``after_train``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.trainer.trainer_harness import RECORDING, hooks, only, run_program

pytestmark = [pytest.mark.tensorflow, pytest.mark.timeout(120)]


def test_unwritable_model_dir_exits_2_naming_it(tmp_path: Path) -> None:
    """The chief cannot create the directory (its parent is a file; unlike a read-only mode,
    that holds for root too): exit 2 before the model is built."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    model_dir = blocker / "model"
    result = run_program(RECORDING, {"TAAS_MODEL_DIR": str(model_dir), "TF_MAX_STEPS": "5"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "setting 'model_dir' (--model_dir, --logdir, --train_dir, TAAS_MODEL_DIR" in (
        result.stderr
    )
    assert f"cannot write to '{model_dir}'" in result.stderr
    assert "exit 2: bad settings (permanent)" in result.stderr
    assert "Traceback" not in result.stderr
    assert hooks(result.stdout, "local") == []  # checked before build_model


def test_misspelt_taas_variable_exits_2_with_the_close_match(tmp_path: Path) -> None:
    result = run_program(
        RECORDING, {"TAAS_MODEL_DIR": str(tmp_path / "model"), "TAAS_MAX_STEP": "5"}
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "unknown environment variable TAAS_MAX_STEP: did you mean TAAS_MAX_STEPS?" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert hooks(result.stdout, "local") == []
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("form", ["loss", "loss_fn"], ids=["loss", "loss_fn-2-towers"])
def test_nan_loss_stops_training_with_exit_3(tmp_path: Path, form: str) -> None:
    """NaN inputs from the 5th step on: that step's update never runs (the train op waits for a
    check of the loss), the job exits 3 saying what to try; the checkpoint saved every step
    stops at the step before, with finite weights; after_train (where exports happen) never
    runs."""
    model_dir = tmp_path / "model"
    result = run_program(
        RECORDING,
        {
            "TAAS_MODEL_DIR": str(model_dir),
            "TF_MAX_STEPS": "50",
            "TAAS_SAVE_CHECKPOINTS_STEPS": "1",
            "RECORD_NAN_FROM": "5",
            "RECORD_FORM": form,
            "TAAS_NUM_TOWERS": "2",  # used by the loss_fn form only
        },
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert re.search(
        r"\[local\] taas: the loss is NaN or infinite, so training stopped .*Lower learning_rate "
        r"\(TAAS_LEARNING_RATE\).* : Tensor had NaN values",
        result.stderr,
    ), result.stderr
    assert "exit 3: loss not finite (permanent)" in result.stderr
    assert "Traceback" not in result.stderr
    records = hooks(result.stdout, "local")
    assert [d["local_step"] for d in only(records, "train")] == [1, 2, 3, 4]
    assert only(records, "after_train") == []

    import numpy as np
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(model_dir))
    assert latest is not None and latest.endswith("-4"), latest
    reader = tf.train.load_checkpoint(latest)
    for name in ("w", "b"):
        assert np.isfinite(reader.get_tensor(name)), name


def test_an_evaluator_that_cannot_write_its_metrics_exits_2_naming_it(tmp_path: Path) -> None:
    """A TF2 evaluator writes its metrics' summaries to model_dir/eval: one it cannot create (a
    pod without the chief's volume, here a file in the way) exits 2 before building the
    model, not with TensorFlow's PermissionDenied traceback and exit 1."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    config = '{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "evaluator", "index": 0}}'
    env = {"TAAS_MODEL_DIR": str(blocker / "model"), "TF_CONFIG": config}
    result = run_program(["examples/keras_digits/keras_digits.py"], env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"cannot write to '{blocker / 'model' / 'eval'}'" in result.stderr
    assert "The evaluator reads the checkpoints there and writes its metrics" in result.stderr
    assert "Traceback" not in result.stderr
