"""Progress lines: task, local and global step, loss, examples/s, s/batch, ETA.

One line every ``log_every_steps`` local steps or ``log_every_secs`` seconds, whichever comes
first (0 turns a trigger off), e.g.::

    [worker:1] step 200 global 410/1000 loss 0.3124 | 2450.1 ex/s 0.041 s/batch | ETA 24s

with the latest value of each other metric the engine saw after the loss (Keras fit's compiled
metrics per step, its validation metrics at each epoch's end: ``loss 0.3124 accuracy 0.9
val_loss 0.35``). A step can hold its line back (``hold``): Keras fit's epoch's last step
waits for the epoch's validation, and the line printed then carries both;

and, when a task starts with the global step already at ``max_steps`` (a re-run on a finished
model dir), one line saying so (:func:`nothing_to_train`). :func:`process_age` times the
"session ready" and "first step done" lines from the start of the process.

Given a :class:`taas.core.publish.Publisher` (the chief's), the reporter also hands it a document
with the same numbers (global step, loss, examples/s, ETA) at most once a second, whatever the
line settings: the operator's PROGRESS and ETA columns come from here.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from taas.core.publish import Publisher, document

PUBLISH_EVERY_SECS = 1.0
#: Values besides the loss a line shows (Keras's compiled and validation metrics), first come.
MAX_SHOWN = 8


class ProgressReporter:
    """Counts local steps and prints progress for one task."""

    def __init__(
        self,
        task: str,
        max_steps: int,
        batch_size: int,
        every_steps: int,
        every_secs: float,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        publisher: Publisher | None = None,
    ) -> None:
        self.task = task
        self.max_steps = max_steps
        self.batch_size = batch_size
        self.every_steps = every_steps
        self.every_secs = every_secs
        self.stream = stream or sys.stdout
        self.clock = clock
        self.local_step = 0
        self.examples = 0
        self.first_global: int | None = None
        self.loss: float | None = None
        self.metrics: dict[str, float] = {}  # the latest value of each, shown after the loss
        self._start = clock()
        self._mark = (self._start, 0, 0)  # (time, local step, examples) at the last line
        self.publisher = publisher
        self._published = (self._start, 0)  # (time, examples) at the last document
        self._rate: float | None = None  # examples/s in the last document
        self.held = False  # a step held back a line that was due (``release`` prints it)

    def step(
        self,
        global_step: int,
        loss: float | None = None,
        examples: int | None = None,
        metrics: Mapping[str, float] | None = None,
        hold: bool = False,
    ) -> None:
        """Record one finished local step that left the global step at ``global_step``
        (``metrics``: its other values by name, shown after the loss; ``hold``: a line due
        now waits for :meth:`release`)."""
        if self.first_global is None:
            self.first_global = global_step
        self.local_step += 1
        self.examples += self.batch_size if examples is None else examples
        if loss is not None:
            self.loss = loss
        if metrics:
            self.note(metrics)
        now = self.clock()
        by_steps = self.every_steps and self.local_step % self.every_steps == 0
        by_time = self.every_secs and now - self._mark[0] >= self.every_secs
        if hold:
            self.held = self.held or bool(by_steps or by_time)
        elif by_steps or by_time:
            self.emit(global_step, now)
        if self.publisher is not None and now - self._published[0] >= PUBLISH_EVERY_SECS:
            self.publish(global_step, now)

    def note(self, values: Mapping[str, float]) -> None:
        """Keep the latest value of each name, for the next line (at most ``MAX_SHOWN``)."""
        for name, value in values.items():
            if name in self.metrics or len(self.metrics) < MAX_SHOWN:
                self.metrics[name] = float(value)

    def release(self, global_step: int, force: bool = False) -> None:
        """Print the line a step held back, if any (or, ``force``, one now when steps ran
        since the last line)."""
        if self.held or (force and self.pending):
            self.emit(global_step)

    def eta_seconds(self, global_step: int, now: float) -> float:
        """Seconds to ``max_steps`` at the global rate seen since this task started (NaN
        before the global step has moved)."""
        if self.first_global is None:
            return float("nan")  # no step yet: no rate
        done_global = global_step - self.first_global
        total_elapsed = max(now - self._start, 1e-9)
        remaining = max(self.max_steps - global_step, 0)
        return remaining * total_elapsed / done_global if done_global > 0 else float("nan")

    def publish(self, global_step: int, now: float | None = None, final: bool = False) -> None:
        """Hand the publisher a document of the current state (examples/s since the last)."""
        if self.publisher is None:
            return
        now = self.clock() if now is None else now
        then, examples0 = self._published
        if self.examples > examples0 and now > then:
            self._rate = (self.examples - examples0) / (now - then)
        # else (nothing new since the last document, e.g. the final one): the last rate stands
        eta = 0.0 if global_step >= self.max_steps else self.eta_seconds(global_step, now)
        doc = document(self.task, global_step, self.max_steps, self.loss, self._rate, eta)
        self.publisher.update(doc, final=final)
        self._published = (now, self.examples)

    def emit(self, global_step: int, now: float | None = None) -> None:
        """Print one progress line now."""
        now = self.clock() if now is None else now
        then, steps0, examples0 = self._mark
        elapsed = max(now - then, 1e-9)
        steps = self.local_step - steps0
        rate = (self.examples - examples0) / elapsed
        per_batch = elapsed / steps if steps else 0.0
        eta = self.eta_seconds(global_step, now)
        loss = f" loss {self.loss:.4f}" if self.loss is not None else ""
        loss += "".join(f" {name} {value:.4g}" for name, value in self.metrics.items())
        print(
            f"[{self.task}] step {self.local_step} global {global_step}/{self.max_steps}{loss} | "
            f"{rate:.1f} ex/s {per_batch:.3f} s/batch | ETA {_eta(eta)}",
            file=self.stream,
            flush=True,
        )
        self._mark = (now, self.local_step, self.examples)
        self.held = False

    @property
    def pending(self) -> bool:
        """True when steps ran since the last line."""
        return self._mark[1] != self.local_step

    @property
    def examples_per_sec(self) -> float:
        """Examples per second since the reporter started."""
        return self.examples / max(self.clock() - self._start, 1e-9)


def _eta(seconds: float) -> str:
    if seconds != seconds:  # NaN: no progress yet
        return "?"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def checkpoint_step(checkpoint: str | None) -> int | None:
    """The global step in a checkpoint path like ``.../model.ckpt-300`` (None if absent)."""
    match = re.search(r"-(\d+)$", os.path.basename(checkpoint or ""))
    return int(match.group(1)) if match else None


def nothing_to_train(
    task: str, step: int, max_steps: int, model_dir: str, is_chief: bool, checkpoint: str | None
) -> str:
    """The line a task prints when the global step is already at ``max_steps`` at its start.

    The chief restored it from ``model_dir``; a worker says the same when it sees that
    checkpoint (``checkpoint``, found before its session), else that the others got there first.
    """
    fix = "Delete the directory or raise TF_MAX_STEPS (max_steps) to train again."
    saved = checkpoint_step(checkpoint)
    if is_chief or (saved is not None and saved >= max_steps):
        return (
            f"[{task}] model dir {model_dir} already at global step {step} >= max_steps "
            f"{max_steps}: nothing to train (resumed from checkpoint). {fix}"
        )
    return (
        f"[{task}] global step {step} >= max_steps {max_steps} when this task joined: nothing "
        f"to train (the chief resumed a finished model dir {model_dir}, or the other tasks "
        f"reached max_steps first). {fix}"
    )


def process_age() -> float:
    """Seconds since this process started (Linux /proc; else since taas was imported)."""
    try:
        with open("/proc/self/stat") as stat:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
        return up - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


_IMPORTED = time.monotonic()
