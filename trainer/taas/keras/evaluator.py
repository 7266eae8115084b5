"""TensorFlow 2, the ``evaluator`` task: sidecar evaluation of every new checkpoint.

The evaluator builds the model alone (default strategy, no cluster), then polls ``model_dir``
every second. Each new ``ckpt-<step>`` is restored into the model (model weights only, so the
optimizer's slots need not exist) and handed to ``evaluate(model, global_step)``; the metrics it
returns are printed and written as summaries under ``model_dir/eval`` (TensorBoard shows them
next to the training loss). It exits 0 after evaluating a checkpoint at ``max_steps`` or more.
No new checkpoint for ``startup_timeout_secs`` raises :class:`PeerUnreachableError` (exit 138,
retryable; the wait is ``taas.core.checkpoint_wait``, shared with graph mode's evaluator). A trainer
without an ``evaluate`` override exits 0 at once.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from taas.core.checkpoint_wait import new_checkpoints
from taas.core.progress_log import checkpoint_step
from taas.core.settings import TrainerSettings
from taas.keras.hooks import KerasHooks
from taas.runtime.preflight import require_writable_model_dir


def run_evaluator(trainer: KerasHooks, settings: TrainerSettings, task: str) -> None:
    """Evaluate each new checkpoint in model_dir until one reaches max_steps."""
    if type(trainer).evaluate is KerasHooks.evaluate:
        print(
            f"[{task}] evaluator: {type(trainer).__name__} has no evaluate(); exiting", flush=True
        )
        return
    require_writable_model_dir(
        settings,
        "eval",
        "The evaluator reads the checkpoints there and writes its metrics to eval/",
    )
    result = trainer.build_model()
    model = result[0] if isinstance(result, tuple) else result
    trainer.model = model
    checkpoint = tf.train.Checkpoint(model=model)
    writer = tf.summary.create_file_writer(os.path.join(settings.model_dir, "eval"))
    checkpoints = new_checkpoints(
        settings.model_dir, settings.startup_timeout_secs, task, tf.train.latest_checkpoint
    )
    for path in checkpoints:
        step = _evaluate(trainer, checkpoint, model, path, writer, task)
        if step >= settings.max_steps:
            writer.flush()
            return


def _evaluate(
    trainer: KerasHooks, checkpoint: Any, model: Any, path: str, writer: Any, task: str
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
