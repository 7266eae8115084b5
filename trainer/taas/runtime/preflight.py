"""Checks before training that turn a user's mistake into exit 2 instead of a traceback.

    require_writable_model_dir(settings)     the chief's model_dir can be created and written
    require_writable_model_dir(settings, "eval", why)   an evaluator's model_dir/eval

Engine-neutral: every engine calls these on the tasks that write, before building anything.
(The ``TAAS_*`` and flag spelling checks run earlier, in ``taas.core.runner``.)
"""

from __future__ import annotations

import os
import uuid

from taas.core.settings import SettingsError, TrainerSettings, sources


def require_writable_model_dir(
    settings: TrainerSettings,
    sub: str = "",
    why: str = "The chief writes checkpoints and summaries there",
) -> None:
    """Create ``model_dir`` (or its ``sub`` directory) and write a probe file in it;
    :class:`SettingsError` if not possible (``why``: who writes there, for the message).

    Through ``tf.io.gfile``, so remote file systems TensorFlow supports pass the same check.
    """
    import tensorflow as tf

    path = os.path.join(settings.model_dir, sub) if sub else settings.model_dir
    probe = os.path.join(path, f".taas-write-check-{uuid.uuid4().hex[:8]}")
    try:
        tf.io.gfile.makedirs(path)
        with tf.io.gfile.GFile(probe, "w") as out:
            out.write("ok")
        tf.io.gfile.remove(probe)
    except (OSError, tf.errors.OpError) as exc:
        reason = exc.message if isinstance(exc, tf.errors.OpError) else str(exc)
        raise SettingsError(
            f"setting 'model_dir' ({sources('model_dir')}): cannot write to {path!r}: "
            f"{reason.strip()}. {why}: give a directory this process can create and write "
            "(in a pod: a volume mounted there, shared with the chief's)"
        ) from None
