"""The training loop every engine shares: step until ``max_steps``, progress, early stop.

    train_loop(task, settings, start_step, step_once, should_stop, chief=False) -> final step

``step_once()`` runs the trainer's ``train`` hook once and returns ``(StepResult, stop)``; the
loop turns results into progress lines (``taas.core.progress_log``), prints the first-step and
"training done" lines, honours ``stop`` (the hook returned True) and ``should_stop()`` (the
session wants to stop), and stops the job when a loss it is handed is NaN or infinite
(:class:`~taas.core.exit_codes.LossNotFiniteError`, exit 3): training on would only spread the bad
values into checkpoints and an export. An engine that can check inside the step (the graph
engine does: the update never runs) stops it earlier; this is the check every engine gets.
The graph engine and the TensorFlow 2 engine's custom steps drive it through ``step_once``;
``Keras fit`` feeds the same :class:`TrainLoop` from a callback, one finished batch at a time.
On the chief (``chief=True``) the loop also publishes the progress (``taas.core.publish``: served
to the operator, written for ``taas run``) from the same numbers as the lines, with the
user's ``taas.log_scalar`` values, so every engine publishes alike.

This module does not import TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from taas.core.engine import StepResult
from taas.core.exit_codes import LOSS_NOT_FINITE, LossNotFiniteError
from taas.core.progress_log import ProgressReporter, process_age
from taas.core.publish import SCALARS, Publisher
from taas.core.settings import TrainerSettings

StepOnce = Callable[[], tuple[StepResult, bool]]


def check_finite_loss(result: StepResult) -> None:
    """Raise :class:`LossNotFiniteError` when the step's loss is NaN or infinite."""
    if result.loss is None or math.isfinite(result.loss):
        return
    raise LossNotFiniteError(
        f"{LOSS_NOT_FINITE} (loss {result.loss} at global step {result.global_step})"
    )


class TrainLoop:
    """The loop's state, for engines whose steps are not driven by :func:`train_loop`.

    ``Keras fit`` runs its own loop: the TensorFlow 2 engine feeds each finished batch to
    :meth:`step` from a callback and stops fit when it returns False. :func:`train_loop` drives
    the same object, so both engines print the same lines and apply the same checks.
    """

    def __init__(
        self, task: str, settings: TrainerSettings, start_step: int, chief: bool = False
    ) -> None:
        self.task = task
        self.max_steps = settings.max_steps
        self.publisher = Publisher.from_settings(task, settings, chief)
        self.progress = ProgressReporter(
            task,
            settings.max_steps,
            settings.batch_size,
            settings.log_every_steps,
            settings.log_every_secs,
            publisher=self.publisher,
        )
        self.global_step = start_step
        self._first = True
        SCALARS.stamp(start_step)
        self.progress.publish(start_step)

    @property
    def running(self) -> bool:
        """True while the global step is below ``max_steps``."""
        return self.global_step < self.max_steps

    def step(self, result: StepResult, stop: bool = False, hold: bool = False) -> bool:
        """Account one finished step; return False when the loop should end after it.
        ``hold``: its progress line, when due, waits for :meth:`epoch_end`."""
        if result.global_step is not None:
            self.global_step = result.global_step
        check_finite_loss(result)
        for name, value in (result.metrics or {}).items():
            SCALARS.log(name, value, self.global_step)
        SCALARS.stamp(self.global_step)
        self.progress.step(
            self.global_step, result.loss, result.examples, result.metrics, hold=hold
        )
        if self._first:
            print(f"[{self.task}] first step done {process_age():.2f}s after start", flush=True)
            self._first = False
        if stop:
            print(f"[{self.task}] train() returned True: stopping early", flush=True)
            return False
        return self.running

    def epoch_end(self, values: Mapping[str, float]) -> None:
        """An epoch's end (Keras fit), with ``values`` measured at the current global step (its
        validation metrics): published with the progress, and shown on a line printed now,
        the epoch's last step's line, which waited for them (a held one, or with values)."""
        for name, value in values.items():
            SCALARS.log(name, value, self.global_step)
        self.progress.note(values)
        self.progress.release(self.global_step, force=bool(values))

    def finish(self) -> int:
        """Print the last progress line and "training done"; return the final global step."""
        progress = self.progress
        if progress.pending:
            progress.emit(self.global_step)
        progress.publish(self.global_step, final=True)
        if self.publisher is not None:
            self.publisher.close()
        print(
            f"[{self.task}] training done: {progress.local_step} local steps, global step "
            f"{self.global_step}, {progress.examples_per_sec:.1f} ex/s",
            flush=True,
        )
        return self.global_step


def train_loop(
    task: str,
    settings: TrainerSettings,
    start_step: int,
    step_once: StepOnce,
    should_stop: Callable[[], bool],
    chief: bool = False,
) -> int:
    """Run ``step_once`` until the global step reaches ``max_steps``; return the last one.
    ``chief``: this task publishes the job's progress (``taas.core.publish``)."""
    loop = TrainLoop(task, settings, start_step, chief)
    while loop.running and not should_stop():
        result, stop = step_once()
        if not loop.step(result, stop):
            break
    return loop.finish()
