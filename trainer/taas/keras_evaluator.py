"""TensorFlow 2, the ``evaluator`` task: sidecar evaluation of every new checkpoint.

The evaluator builds the model alone (default strategy, no cluster), then polls ``model_dir``
every second. Each new ``ckpt-<step>`` is restored into the model (model weights only, so the
optimizer's slots need not exist) and handed to ``evaluate(model, global_step)``; the metrics it
returns are printed and written as summaries under ``model_dir/eval`` (TensorBoard shows them
next to the training loss). It exits 0 after evaluating a checkpoint at ``max_steps`` or more.
No new checkpoint for ``startup_timeout_secs`` raises :class:`PeerUnreachableError` (exit 138,
retryable). A trainer without an ``evaluate`` override exits 0 at once.
"""

from __future__ import annotations

import os
import time
from typing import Any

import tensorflow as tf

from taas.exit_codes import PeerUnreachableError
from taas.keras_base import KerasTrainer
from taas.progress import checkpoint_step
from taas.settings import TrainerSettings

POLL_SECS = 1.0


def run_evaluator(trainer: KerasTrainer, settings: TrainerSettings, task: str) -> None:
    """Evaluate each new checkpoint in model_dir until one reaches max_steps."""
    if type(trainer).evaluate is KerasTrainer.evaluate:
        print(
            f"[{task}] evaluator: {type(trainer).__name__} has no evaluate(); exiting", flush=True
        )
        return
    result = trainer.build_model()
    model = result[0] if isinstance(result, tuple) else result
    trainer.model = model
    checkpoint = tf.train.Checkpoint(model=model)
    writer = tf.summary.create_file_writer(os.path.join(settings.model_dir, "eval"))
    seen = None
    deadline = time.monotonic() + settings.startup_timeout_secs
    while True:
        path = tf.train.latest_checkpoint(settings.model_dir)
        if path and path != seen:
            seen = path
            deadline = time.monotonic() + settings.startup_timeout_secs
            step = _evaluate(trainer, checkpoint, model, path, writer, task)
            if step >= settings.max_steps:
                writer.flush()
                return
        elif time.monotonic() > deadline:
            raise PeerUnreachableError(
                f"[{task}] no new checkpoint in {settings.model_dir} for "
                f"{settings.startup_timeout_secs:.0f}s (startup_timeout_secs)"
            )
        time.sleep(POLL_SECS)


def _evaluate(
    trainer: KerasTrainer, checkpoint: Any, model: Any, path: str, writer: Any, task: str
) -> int:
    checkpoint.restore(path).expect_partial()
    step = checkpoint_step(path) or 0
    metrics = trainer.evaluate(model, step) or {}
    shown = " ".join(f"{name} {float(value):.4f}" for name, value in sorted(metrics.items()))
    print(f"[{task}] evaluated {os.path.basename(path)} (global step {step}) {shown}", flush=True)
    with writer.as_default(step=step):
        for name, value in metrics.items():
            tf.summary.scalar(name, float(value))
    writer.flush()
    return step
