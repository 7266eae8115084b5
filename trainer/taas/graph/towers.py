"""Train op construction for the richer form: towers, gradient averaging, sync wrapping.

With one device the loss is minimised directly. With several (GPUs, or CPU towers for tests)
``loss_fn`` is called once per device under ``AUTO_REUSE`` (create variables with
``tf.compat.v1.get_variable`` or Keras layers built once so towers share them), each tower's
gradients are computed on its device and averaged, and one update is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf


def average_gradients(tower_grads: Sequence[Sequence[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Average ``[(grad, var), ...]`` lists, one per tower, variable by variable."""
    averaged = []
    for pairs in zip(*tower_grads, strict=True):
        var = pairs[0][1]
        grads = [g for g, _ in pairs if g is not None]
        if not grads:
            averaged.append((None, var))
            continue
        averaged.append((tf.add_n(grads) / float(len(grads)), var))
    return averaged


def build_towers(
    loss_fn: Callable[[], Any],
    optimizer: Any,
    devices: Sequence[str],
    global_step: Any,
    device_for: Callable[[str], Any],
    guard: Callable[[list[tuple[Any, Any]], Any], list[tuple[Any, Any]]] | None = None,
) -> tuple[Any, Any]:
    """Build ``(train_op, mean_loss)`` over ``devices``; ``device_for(dev)`` gives a device fn.

    ``guard(grads, mean_loss)`` may replace the gradients applied (the graph engine makes them
    wait for its non-finite loss check).
    """
    losses = []
    tower_grads = []
    scope = tf.compat.v1.get_variable_scope()
    for i, dev in enumerate(devices):
        with (
            tf.compat.v1.device(device_for(dev)),
            tf.compat.v1.variable_scope(scope, reuse=tf.compat.v1.AUTO_REUSE),
            tf.name_scope(f"tower_{i}"),
        ):
            loss = loss_fn()
            losses.append(loss)
            tower_grads.append(optimizer.compute_gradients(loss))
    grads = average_gradients(tower_grads) if len(devices) > 1 else tower_grads[0]
    with tf.compat.v1.device(device_for(devices[0])):
        mean_loss = tf.add_n(losses) / float(len(losses)) if len(losses) > 1 else losses[0]
        if guard is not None:
            grads = guard(list(grads), mean_loss)
        train_op = optimizer.apply_gradients(grads, global_step=global_step)
    return train_op, mean_loss
