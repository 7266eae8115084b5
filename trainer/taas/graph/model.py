"""Graph mode, step 1: build the training graph around the trainer's hooks, as a typed object.

    build_graph(trainer, settings, cluster) -> GraphModel   (in the default graph)
    build_model_ops(trainer, settings, cluster, device_fn) -> ModelOps

``build_model_ops`` calls ``build_model`` (and ``create_optimizer`` for the loss-only forms),
builds the train op for the richer forms (towers, ``SyncReplicasOptimizer`` in sync mode; the
update waits for a check that the loss is finite) and sets ``trainer.global_step``,
``train_op``, ``loss`` and ``optimizer``. ``build_graph`` adds what the training task needs
around it: the warm start (``get_init_fn``), the saver, the sync hook, the start barrier and
the PS "done" signal. The evaluator uses ``build_model_ops`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from taas.core.exit_codes import LOSS_NOT_FINITE
from taas.core.placement import ClusterInfo
from taas.core.settings import SettingsError, TrainerSettings
from taas.graph.devices import tower_devices
from taas.graph.hooks import GraphHooks, InitFn
from taas.graph.towers import build_towers
from taas.runtime import coordination

v1 = tf.compat.v1
DeviceFn = Callable[[str], Any]


@dataclass(frozen=True)
class ModelOps:
    """What ``build_model`` gave, finished: ``train_op``/``loss``/``step_after`` are None in
    the old style (the user built and runs the train op; ``optimizer`` is what it returned)."""

    global_step: Any
    optimizer: Any
    train_op: Any = None
    loss: Any = None
    step_after: Any = None  # the global step, read after the train op ran


@dataclass(frozen=True)
class GraphModel:
    """Everything the graph engine needs from the built graph of a training task."""

    ops: ModelOps
    saver: Any
    init_fn: InitFn | None = None  # chief warm start, only without a checkpoint in model_dir
    sync_hook: Any = None  # SyncReplicasOptimizer's session-run hook
    release_op: Any = None  # chief: tokens that unblock sync workers at the end
    barrier: coordination.StartBarrier | None = None  # sync start barrier (distributed)
    done_op: Any = None  # tells every PS this task is finished (distributed)


def checked_gradients(grads: Sequence[tuple[Any, Any]], loss: Any) -> list[tuple[Any, Any]]:
    """``grads`` (``[(grad, var), ...]``), each waiting for a check that ``loss`` is finite.

    A NaN or infinite loss fails the step before any update, so a diverged step never reaches
    the variables, the global step or a checkpoint; the error carries
    :data:`~taas.core.exit_codes.LOSS_NOT_FINITE` (exit 3). The dependency sits on the gradients
    only: ``SyncReplicasOptimizer.apply_gradients`` also builds ops that run without a feed
    (its chief queue runner), which must not wait for the loss.
    """
    check = tf.debugging.check_numerics(loss, LOSS_NOT_FINITE)
    checked: list[tuple[Any, Any]] = []
    for grad, var in grads:
        if grad is not None:
            with tf.control_dependencies([check]):
                if isinstance(grad, tf.IndexedSlices):  # sparse (embedding) gradients
                    grad = tf.IndexedSlices(
                        tf.identity(grad.values), grad.indices, grad.dense_shape
                    )
                else:
                    grad = tf.identity(grad)
        checked.append((grad, var))
    return checked


def device_fn(cluster: ClusterInfo) -> DeviceFn:
    """Device function for ops built on ``worker_device``: variables round-robin on the PS."""
    if not cluster.distributed:
        return lambda worker_device: worker_device or None
    spec = v1.train.ClusterSpec(cluster.cluster_dict())
    return lambda worker_device: v1.train.replica_device_setter(
        cluster=spec, worker_device=worker_device
    )


def sync_replicas(settings: TrainerSettings, cluster: ClusterInfo) -> tuple[int, int]:
    """(replicas_to_aggregate, total_num_replicas) for sync mode."""
    total = cluster.num_replicas
    if cluster.dynamic and settings.replicas_to_aggregate is None:
        raise SettingsError(
            "sync mode with dynamic workers: set replicas_to_aggregate "
            "(TAAS_REPLICAS_TO_AGGREGATE), a task cannot see how many workers there are"
        )
    if settings.backup_workers >= total:
        raise SettingsError(
            f"backup_workers={settings.backup_workers} must be below the number of "
            f"training replicas ({total}); lower TAAS_BACKUP_WORKERS"
        )
    aggregate = settings.replicas_to_aggregate or total - settings.backup_workers
    return aggregate, max(total, aggregate)


def build_model_ops(
    trainer: GraphHooks,
    settings: TrainerSettings,
    cluster: ClusterInfo,
    place: DeviceFn,
    *,
    is_chief: bool,
    sync: bool,
    num_replicas: int,
) -> ModelOps:
    """Call ``build_model`` (and ``create_optimizer``) and finish the train op; see module.

    ``cluster`` places the towers; ``sync`` wraps the optimizer in ``SyncReplicasOptimizer``.
    """
    global_step = v1.train.get_or_create_global_step()
    trainer.global_step = global_step
    result = trainer.build_model(global_step, is_chief, sync, num_replicas)
    optimizer_type = v1.train.Optimizer
    if result is None or isinstance(result, optimizer_type):
        ops = ModelOps(global_step, result)
    else:
        loss, optimizer = result if isinstance(result, tuple) else (result, None)
        optimizer = optimizer if optimizer is not None else trainer.create_optimizer()
        if not isinstance(optimizer, optimizer_type):
            raise TypeError(
                "build_model/create_optimizer must give a tf.compat.v1.train optimizer "
                f"(graph mode), got {type(optimizer).__name__}"
            )
        if sync and not isinstance(optimizer, v1.train.SyncReplicasOptimizer):
            aggregate, total = sync_replicas(settings, cluster)
            optimizer = v1.train.SyncReplicasOptimizer(
                optimizer, replicas_to_aggregate=aggregate, total_num_replicas=total
            )
        if callable(loss):
            devices = tower_devices(settings, cluster)
            train_op, loss = build_towers(
                loss, optimizer, devices, global_step, place, guard=checked_gradients
            )
        else:  # minimize(), with the gradients waiting for the check
            grads = checked_gradients(optimizer.compute_gradients(loss), loss)
            train_op = optimizer.apply_gradients(grads, global_step=global_step)
        with tf.control_dependencies([train_op]):
            step_after = tf.identity(global_step.read_value())
        v1.summary.scalar("loss", loss)
        ops = ModelOps(global_step, optimizer, train_op, loss, step_after)
        trainer.train_op, trainer.loss = train_op, loss
    trainer.optimizer = ops.optimizer
    return ops


def build_graph(trainer: GraphHooks, settings: TrainerSettings, cluster: ClusterInfo) -> GraphModel:
    """The training task's graph (in the default graph); see the module docstring."""
    place = device_fn(cluster)
    sync_hook = release_op = barrier = init_fn = done_op = None
    with v1.device(place(cluster.device)):
        ops = build_model_ops(
            trainer,
            settings,
            cluster,
            place,
            is_chief=cluster.is_chief,
            sync=settings.sync,
            num_replicas=cluster.num_replicas,
        )
        if isinstance(ops.optimizer, v1.train.SyncReplicasOptimizer):
            sync_hook = ops.optimizer.make_session_run_hook(cluster.is_chief)
            release_op = ops.optimizer.get_init_tokens_op(cluster.num_replicas)
            if cluster.distributed:
                barrier = coordination.StartBarrier(cluster, sync_replicas(settings, cluster)[0])
        elif settings.sync:
            print(
                f"[{cluster.task_name}] WARNING: sync=true but build_model returned "
                f"{type(ops.optimizer).__name__}, not a SyncReplicasOptimizer: updates are async",
                flush=True,
            )
        if cluster.is_chief and settings.checkpoint_path:
            if v1.train.latest_checkpoint(settings.model_dir):
                print(
                    f"[{cluster.task_name}] ignoring checkpoint_path "
                    f"{settings.checkpoint_path}: {settings.model_dir} has a checkpoint",
                    flush=True,
                )
            else:
                init_fn = trainer.get_init_fn(settings.checkpoint_path)
        saver = v1.train.Saver(sharded=False, max_to_keep=5, allow_empty=True)
    if cluster.distributed:
        done_op = coordination.done_signal_op(cluster)
    return GraphModel(ops, saver, init_fn, sync_hook, release_op, barrier, done_op)
