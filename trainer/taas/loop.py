"""The training loop every engine shares: step until ``max_steps``, progress, early stop.

    train_loop(task, settings, start_step, step_once, should_stop, chief=False) -> final step

``step_once()`` runs the trainer's ``train`` hook once and returns ``(StepResult, stop)``; the
loop turns results into progress lines (``taas.progress``), prints the first-step and
"training done" lines, honours ``stop`` (the hook returned True) and ``should_stop()`` (the
session wants to stop), and stops the job when a loss it is handed is NaN or infinite
(:class:`~taas.exit_codes.LossNotFiniteError`, exit 3): training on would only spread the bad
values into checkpoints and an export. An engine that can check inside the step (the graph
engine does: the update never runs) stops it earlier; this is the check every engine gets.
On the chief (``chief=True``) the loop also publishes the progress (``taas.publish``: served
to the operator, written for ``taas run``) from the same numbers as the lines, with the
user's ``taas.log_scalar`` values, so every engine publishes alike.
The graph engine drives the loop today; a TensorFlow 2 engine drives it with its own
``step_once`` (and passes ``chief``).

This module does not import TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from taas.engine import StepResult
from taas.exit_codes import LOSS_NOT_FINITE, LossNotFiniteError
from taas.progress import ProgressReporter, process_age
from taas.publish import SCALARS, Publisher
from taas.settings import TrainerSettings

StepOnce = Callable[[], tuple[StepResult, bool]]


def check_finite_loss(result: StepResult) -> None:
    """Raise :class:`LossNotFiniteError` when the step's loss is NaN or infinite."""
    if result.loss is None or math.isfinite(result.loss):
        return
    raise LossNotFiniteError(
        f"{LOSS_NOT_FINITE} (loss {result.loss} at global step {result.global_step})"
    )


def train_loop(
    task: str,
    settings: TrainerSettings,
    start_step: int,
    step_once: StepOnce,
    should_stop: Callable[[], bool],
    chief: bool = False,
) -> int:
    """Run ``step_once`` until the global step reaches ``max_steps``; return the last one.
    ``chief``: this task publishes the job's progress (``taas.publish``)."""
    publisher = Publisher.from_settings(task, settings, chief)
    progress = ProgressReporter(
        task,
        settings.max_steps,
        settings.batch_size,
        settings.log_every_steps,
        settings.log_every_secs,
        publisher=publisher,
    )
    step = start_step
    SCALARS.stamp(step)
    progress.publish(step)
    first = True
    while step < settings.max_steps and not should_stop():
        result, stop = step_once()
        step = result.global_step if result.global_step is not None else step
        SCALARS.stamp(step)
        check_finite_loss(result)
        progress.step(step, result.loss, result.examples)
        if first:
            print(f"[{task}] first step done {process_age():.2f}s after start", flush=True)
            first = False
        if stop:
            print(f"[{task}] train() returned True: stopping early", flush=True)
            break
    if progress.pending:
        progress.emit(step)
    progress.publish(step, final=True)
    if publisher is not None:
        publisher.close()
    print(
        f"[{task}] training done: {progress.local_step} local steps, global step {step}, "
        f"{progress.examples_per_sec:.1f} ex/s",
        flush=True,
    )
    return step
