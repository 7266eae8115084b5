"""Exit codes of a trainer process, chosen for the operator's ``ExitCode`` restart policy.

====  =========================================================  ===========================
code  meaning                                                    ExitCode policy
====  =========================================================  ===========================
0     training finished (every task, the PS included)            job succeeds
1     bug in user code or the model (traceback printed)          permanent: job fails
2     bad setting, flag, TF_CONFIG, ``TAAS_*`` variable, or an   permanent: job fails
      unwritable model_dir (message names the field)
3     loss became NaN or infinite: training diverged, stopped    permanent: job fails
      before that step's update (no checkpoint or export of it)
130   interrupted (SIGINT)                                       retryable
138   lost peer: PS/worker unreachable, session aborted, a       retryable: pod recreated,
      heartbeat or TensorFlow's coordination service lost,       resumes from checkpoint
      cluster not up within ``startup_timeout_secs``
137   killed (SIGKILL, e.g. OOM or ``kubectl delete``)           retryable (set by the kernel)
143   terminated (SIGTERM); the TensorFlow 2 engine and a graph  retryable: pod recreated,
      chief first save a checkpoint (:class:`PreemptedError`)    resumes from the latest
      unless the PS they save from is gone (then at once: 143)   checkpoint
====  =========================================================  ===========================

A TensorFlow error is a lost peer (138) by its class (unavailable, aborted, deadline exceeded,
cancelled) or by its message (:data:`PEER_LOST_MARKERS`: the coordination service reports a
lost heartbeat as UNAVAILABLE inside other errors, and an agent it dropped fails every later
call with FAILED_PRECONDITION "Agent must be in CONNECTED state"). A MultiWorkerMirroredStrategy
worker that loses a peer at the end barrier, after its final checkpoint, exits 0
(``taas.keras.engine``).

This module does not import TensorFlow: TensorFlow's errors are recognised only when a program
loaded it (nothing else can raise them).
"""

from __future__ import annotations

import sys
from enum import IntEnum
from typing import Any

from taas.core.settings import SettingsError


class ExitCode(IntEnum):
    """The codes in the module table."""

    OK = 0
    USER_ERROR = 1
    BAD_SETTINGS = 2
    LOSS_NOT_FINITE = 3
    INTERRUPTED = 130
    PEER_LOST = 138
    TERMINATED = 143


class PeerUnreachableError(RuntimeError):
    """A cluster peer (usually a PS) did not answer in time."""


class PreemptedError(RuntimeError):
    """SIGTERM (a pod being stopped) arrived; a checkpoint was saved, the task exits 143."""


LOSS_NOT_FINITE = (
    "taas: the loss is NaN or infinite, so training stopped (a diverged model is not worth "
    "a checkpoint or an export). Lower learning_rate (TAAS_LEARNING_RATE), check the input "
    "data for NaN or infinite values, or guard the loss (clip gradients, add an epsilon "
    "inside logs)"
)
"""The message of a non-finite loss; the graph engine's in-graph check carries it too."""


class LossNotFiniteError(ArithmeticError):
    """The training loss became NaN or infinite; the message says where and what to try."""


def loss_not_finite(exc: BaseException) -> str | None:
    """The one-line message when ``exc`` is :class:`LossNotFiniteError` or TensorFlow's failed
    check of the loss (whose message also holds the node and the graph's stack), else None."""
    if isinstance(exc, LossNotFiniteError):
        return str(exc)
    message = getattr(exc, "message", None)
    if not isinstance(message, str):
        return None
    for line in message.splitlines():
        # From the marker on: with several devices TensorFlow prefixes "(0) INVALID_ARGUMENT: ".
        start = line.find(LOSS_NOT_FINITE)
        if start >= 0:
            return line[start:].strip()
    return None


PEER_LOST_MARKERS = (
    "heartbeat timeout",
    "stopped sending heartbeats",
    "must be in connected state",
    "is not in connected state",
    "coordination service",
    "barrier timed out",
    "has restarted",
    "was probably restarted",
    "incarnation",
    "collective ops is aborted",
    "socket closed",
    "connection reset",
    "connection refused",
    "failed to connect to all addresses",
)
"""Lower-case pieces of TensorFlow's messages (TF 2.21's coordination service, collectives and
gRPC) that mean a peer, its heartbeat or the coordination service was lost."""

PEER_LOST_CODES = ("UNAVAILABLE: ", "ABORTED: ", "DEADLINE_EXCEEDED: ")
"""Status codes TensorFlow writes into another error's message when it wraps a lost peer's."""

NOT_PEER_MARKERS = ("not enabled", "not been initialized", "must be initialized")
"""Coordination service messages about how it was set up (a bug, not a lost peer)."""


def peer_lost(exc: BaseException) -> bool:
    """True when ``exc`` (or the error it was raised from) is TensorFlow's error for a lost
    peer, heartbeat, coordination service or unavailable task."""
    errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    if errors is None:  # TensorFlow not loaded: none of its errors can have been raised
        return False
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, errors.OpError) and _names_lost_peer(errors, seen):
            return True
        seen = seen.__cause__
    return False


def _names_lost_peer(errors: Any, exc: BaseException) -> bool:
    retryable = (
        errors.UnavailableError,
        errors.AbortedError,
        errors.DeadlineExceededError,
        errors.CancelledError,
    )
    if isinstance(exc, retryable):
        return True
    return names_lost_peer(str(getattr(exc, "message", "") or exc))


def names_lost_peer(message: str) -> bool:
    """True when TensorFlow's error ``message`` says a peer, a heartbeat or the coordination
    service was lost (:data:`PEER_LOST_MARKERS`, :data:`PEER_LOST_CODES`)."""
    lower = message.lower()
    if any(marker in lower for marker in NOT_PEER_MARKERS):
        return False
    return any(marker in lower for marker in PEER_LOST_MARKERS) or any(
        code in message for code in PEER_LOST_CODES
    )


def classify(exc: BaseException) -> ExitCode:
    """Map an exception that ended training to its exit code."""
    if isinstance(exc, SettingsError):
        return ExitCode.BAD_SETTINGS
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(exc, PeerUnreachableError):
        return ExitCode.PEER_LOST
    if isinstance(exc, PreemptedError):
        return ExitCode.TERMINATED
    if loss_not_finite(exc) is not None:
        return ExitCode.LOSS_NOT_FINITE
    # TensorFlow's errors (also loaded when a task serves without its Python API)
    if peer_lost(exc):
        return ExitCode.PEER_LOST
    return ExitCode.USER_ERROR
