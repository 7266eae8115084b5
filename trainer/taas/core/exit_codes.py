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
138   lost peer: PS/worker unreachable, session aborted,         retryable: pod recreated,
      cluster not up within ``startup_timeout_secs``             resumes from checkpoint
137   killed (SIGKILL, e.g. OOM or ``kubectl delete``)           retryable (set by the kernel)
143   terminated (SIGTERM); the TensorFlow 2 engine and a graph  retryable: pod recreated,
      chief first save a checkpoint (:class:`PreemptedError`)    resumes from the latest
      unless the PS they save from is gone (then at once: 143)   checkpoint
====  =========================================================  ===========================

This module does not import TensorFlow: TensorFlow's errors are recognised only when a program
loaded it (nothing else can raise them).
"""

from __future__ import annotations

import sys
from enum import IntEnum

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
    # TensorFlow's error classes (also loaded when a task serves without its Python API)
    errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    if errors is None:  # TensorFlow not loaded: none of its errors can have been raised
        return ExitCode.USER_ERROR
    retryable = (
        errors.UnavailableError,
        errors.AbortedError,
        errors.DeadlineExceededError,
        errors.CancelledError,
    )
    if isinstance(exc, retryable):
        return ExitCode.PEER_LOST
    return ExitCode.USER_ERROR
