"""Graph mode, the ``evaluator`` task: call ``evaluate`` on every new checkpoint in model_dir.

The evaluator builds the same model a worker does (``build_model``, ``create_optimizer`` for
the loss-only forms) as one local process (no server, no PS, no sync wrapper), then polls
``model_dir`` every second. For each new checkpoint it restores the variables into a fresh
session and calls ``evaluate(session, global_step)``; it exits 0 after evaluating one at
``max_steps`` or more. No new checkpoint for ``startup_timeout_secs`` raises
:class:`PeerUnreachableError` (exit 138, retryable; the wait is ``taas.core.checkpoint_wait``,
shared with the TensorFlow 2 evaluator). A trainer without an ``evaluate`` override exits 0 at
once.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from taas.core.checkpoint_wait import new_checkpoints
from taas.core.placement import ClusterInfo
from taas.core.settings import TrainerSettings
from taas.graph.hooks import GraphHooks
from taas.graph.model import build_model_ops, device_fn

v1 = tf.compat.v1


def run_evaluator(
    trainer: GraphHooks, settings: TrainerSettings, cluster: ClusterInfo, config: Any
) -> None:
    """Evaluate each new checkpoint in model_dir until one reaches max_steps."""
    task = cluster.task_name
    if type(trainer).evaluate is GraphHooks.evaluate:
        print(
            f"[{task}] evaluator: {type(trainer).__name__} has no evaluate(); exiting", flush=True
        )
        return
    graph = tf.Graph()
    with graph.as_default():
        local = ClusterInfo()  # one local process: no PS, towers on this machine, no sync wrap
        ops = build_model_ops(
            trainer, settings, local, device_fn(local), is_chief=False, sync=False, num_replicas=1
        )
        saver = v1.train.Saver(allow_empty=True)
    checkpoints = new_checkpoints(
        settings.model_dir, settings.startup_timeout_secs, task, v1.train.latest_checkpoint
    )
    for checkpoint in checkpoints:
        with v1.Session(graph=graph, config=config) as session:
            saver.restore(session, checkpoint)
            step = int(session.run(ops.global_step))
            print(f"[{task}] evaluating {checkpoint}", flush=True)
            trainer.evaluate(session, step)
        if step >= settings.max_steps:
            return
