"""Checks before training that turn a user's mistake into exit 2 instead of a traceback.

    require_writable_model_dir(settings)     the chief's model_dir can be created and written
    require_writable_model_dir(settings, "eval", why)   an evaluator's model_dir/eval

Engine-neutral: every engine calls these on the tasks that write, before building anything.
A local model_dir is checked without TensorFlow.
(The ``TAAS_*`` and flag spelling checks run earlier, in ``taas.core.launch``.)
"""

from __future__ import annotations

import os
import uuid

from taas.core.settings import SettingsError, TrainerSettings, sources

#: Why an evaluator needs model_dir/eval writable (its message).
EVALUATOR_WRITES = "The evaluator reads the checkpoints there and writes its metrics to eval/"


def require_writable_model_dir(
    settings: TrainerSettings,
    sub: str = "",
    why: str = "The chief writes checkpoints and summaries there",
) -> None:
    """Create ``model_dir`` (or its ``sub`` directory) and write a probe file in it;
    :class:`SettingsError` if not possible (``why``: who writes there, for the message).

    A local directory is checked with the os module (no TensorFlow needed yet); a remote one
    (``gs://``...) through ``tf.io.gfile``, so the file systems TensorFlow supports pass the
    same check.
    """
    path = os.path.join(settings.model_dir, sub) if sub else settings.model_dir
    probe = os.path.join(path, f".taas-write-check-{uuid.uuid4().hex[:8]}")
    try:
        if "://" in path:
            _probe_remote(path, probe)
        else:
            os.makedirs(path, exist_ok=True)
            with open(probe, "w") as out:
                out.write("ok")
            os.remove(probe)
    except OSError as exc:
        reason = f"{exc.strerror}" if exc.strerror else str(exc)
        raise SettingsError(
            f"setting 'model_dir' ({sources('model_dir')}): cannot write to {path!r}: "
            f"{reason.strip()}. {why}: give a directory this process can create and write "
            "(in a pod: a volume mounted there, shared with the chief's)"
        ) from None


def _probe_remote(path: str, probe: str) -> None:
    """The write check through TensorFlow's file systems; its errors as OSError."""
    import tensorflow as tf

    try:
        tf.io.gfile.makedirs(path)
        with tf.io.gfile.GFile(probe, "w") as out:
            out.write("ok")
        tf.io.gfile.remove(probe)
    except tf.errors.OpError as exc:
        raise OSError(exc.message) from None
