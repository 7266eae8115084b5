"""The evaluator's wait for new checkpoints, shared by both engines' ``evaluator`` tasks.

    for path in new_checkpoints(model_dir, timeout_secs, task, latest): ...

Polls ``latest(model_dir)`` (TensorFlow's ``latest_checkpoint``, handed in by the engine) every
``POLL_SECS`` and yields each checkpoint path not seen before; the caller evaluates it and stops
iterating once one reaches ``max_steps``. No new checkpoint for ``timeout_secs`` (counted from
the start, then from the last new one) raises :class:`PeerUnreachableError` (exit 138,
retryable). This module does not import TensorFlow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from taas.core.exit_codes import PeerUnreachableError

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
