"""The evaluator's wait for new checkpoints, shared by both engines' ``evaluator`` tasks.

    for path in new_checkpoints(model_dir, timeout_secs, task, latest): ...
    local_latest(model_dir) -> str | None       latest_checkpoint of a local dir, without TF
    AfterFirstCheckpoint(make_engine, settings, task, check)   an Engine: check(), waits for
                                                the first checkpoint, then runs make_engine()

Polls ``latest(model_dir)`` (TensorFlow's ``latest_checkpoint``, handed in by the engine) every
``POLL_SECS`` and yields each checkpoint path not seen before; the caller evaluates it and stops
iterating once one reaches ``max_steps``. No new checkpoint for ``timeout_secs`` (counted from
the start, then from the last new one) raises :class:`PeerUnreachableError` (exit 138,
retryable). This module does not import TensorFlow.

An evaluator has nothing to do before the first checkpoint: :class:`AfterFirstCheckpoint` waits
for it reading the ``checkpoint`` file itself (a local model_dir), and only then lets the engine
import TensorFlow, so an evaluator started with the job does not take the CPU the trainers need
for their own start (a program that has not imported TensorFlow yet: ``taas.keras.trainer``).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator

from taas.core.engine import Engine
from taas.core.exit_codes import PeerUnreachableError
from taas.core.settings import TrainerSettings

POLL_SECS = 1.0


def new_checkpoints(
    model_dir: str,
    timeout_secs: float,
    task: str,
    latest: Callable[[str], str | None],
    poll_secs: float = POLL_SECS,
) -> Iterator[str]:
    """Yield each new checkpoint in ``model_dir``, forever; raise after ``timeout_secs`` idle."""
    seen = None
    deadline = time.monotonic() + timeout_secs
    while True:
        path = latest(model_dir)
        if path and path != seen:
            seen = path
            deadline = time.monotonic() + timeout_secs
            yield path
        elif time.monotonic() > deadline:
            raise PeerUnreachableError(
                f"[{task}] no new checkpoint in {model_dir} for "
                f"{timeout_secs:.0f}s (startup_timeout_secs)"
            )
        time.sleep(poll_secs)


_MODEL_CHECKPOINT = re.compile(r'^model_checkpoint_path:\s*"(.*)"\s*$', re.MULTILINE)


def local_latest(model_dir: str) -> str | None:
    """What ``tf.train.latest_checkpoint`` returns for a local directory, read without
    TensorFlow: the path its ``checkpoint`` file names, once that checkpoint's index exists."""
    try:
        with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as index:
            found = _MODEL_CHECKPOINT.search(index.read(64 * 1024))
    except (OSError, UnicodeDecodeError):
        return None
    if not found:
        return None
    path = os.path.join(model_dir, found.group(1))
    return path if os.path.exists(path + ".index") else None


class AfterFirstCheckpoint:
    """An evaluator's engine: wait for the first checkpoint in a local model_dir (at most
    ``startup_timeout_secs``: exit 138, as the evaluator's own wait), then run the real one."""

    def __init__(
        self,
        make_engine: Callable[[], Engine],
        settings: TrainerSettings,
        task: str,
        check: Callable[[], None] = lambda: None,
    ) -> None:
        """``check``: what must hold before waiting (the engine's own preflight)."""
        self.make_engine, self.settings, self.task, self.check = make_engine, settings, task, check

    def run(self) -> None:
        self.check()
        settings = self.settings
        waiting = new_checkpoints(
            settings.model_dir, settings.startup_timeout_secs, self.task, local_latest
        )
        next(waiting)
        self.make_engine().run()


def evaluator_waits_first(settings: TrainerSettings, task_type: str) -> bool:
    """Whether an evaluator can wait for the first checkpoint before TensorFlow is imported:
    the program has not imported it, and model_dir is a local directory."""
    return (
        task_type == "evaluator"
        and "tensorflow" not in sys.modules
        and ("://" not in settings.model_dir)
    )
