"""The TensorFlow 2 engine: one task of a ``tf.distribute`` job around a ``taas.KerasTrainer``.

:class:`KerasEngine` implements :class:`taas.core.engine.Engine`. The strategy and role come from
the cluster's shape (``taas.keras.strategies``):

- ``evaluate`` (an evaluator task): sidecar evaluation of each new checkpoint
  (``taas.keras.evaluator``);
- ``serve`` (PS and worker tasks under ParameterServerStrategy): start the gRPC server and serve
  until the coordinator says "done" (``taas.runtime.coordination``), then exit 0;
- ``train`` / ``coordinate``: build the model in the strategy's scope, resume or warm-start,
  run the loop (``taas.keras.steps``: fit or the custom step, through the shared
  ``taas.core.loop.TrainLoop``), ``after_train``, the final checkpoint, "done" to the servers.

A sibling of :class:`taas.graph.engine.GraphEngine`: it shares the program (settings, cluster,
flags, exit codes), the model dir check, the loop and the progress lines, not the session code.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import tensorflow as tf

from taas.core import stopping
from taas.core.exit_codes import peer_lost
from taas.core.loop import TrainLoop
from taas.core.placement import ClusterInfo
from taas.core.progress_log import nothing_to_train, process_age
from taas.core.settings import SettingsError, refuse_fit_only
from taas.keras.checkpoints import CheckpointKeeper
from taas.keras.evaluator import run_evaluator
from taas.keras.exports import ExportRequests, export_together
from taas.keras.fit import KERAS3_NO_FIT, fit_keras, own_loop, run_fit
from taas.keras.hooks import FIT_ONLY_HOOKS, KerasHooks, custom_step, overrides_hook
from taas.keras.own_fit import prepare, run_own_fit
from taas.keras.steps import run_custom_steps
from taas.keras.strategies import StrategyPlan, plan_strategy
from taas.runtime import coordination, keepalive
from taas.runtime.preflight import require_writable_model_dir

DONE_SIGNAL_TIMEOUT_SECS = 10.0
END_LINGER_SECS = 0.5
END_BARRIER_GRACE_SECS = 5.0


class KerasEngine:
    """Drives a :class:`~taas.KerasTrainer` through one task's part (see the module)."""

    def __init__(self, trainer: KerasHooks, settings: Any, cluster: ClusterInfo) -> None:
        self.trainer, self.settings, self.cluster = trainer, settings, cluster
        #: the trainer's own step (``train_batch``), or None: ``fit`` runs (set by ``run``)
        self.step_fn: Any = None
        trainer.settings = settings
        trainer.cluster = cluster

    def run(self) -> None:
        """Play this task's part: evaluate, serve, or train (coordinate)."""
        settings, cluster = self.settings, self.cluster
        gpus = tf.config.list_physical_devices("GPU")
        plan = plan_strategy(settings, cluster, len(gpus))
        configure_devices(settings, plan, gpus)
        task = cluster.task_name
        print(f"[{task}] {plan.name}: {_describe(plan)}", flush=True)
        if plan.role == "evaluate":
            self.trainer.strategy = tf.distribute.get_strategy()
            self.trainer.global_batch_size = settings.batch_size
            run_evaluator(self.trainer, settings, task)
            return
        if plan.role == "serve":
            self._serve(plan)
            return
        self.step_fn = custom_step(self.trainer)
        if self.step_fn is not None:
            refuse_custom_step_with_fit_hooks(self.trainer, settings)
        if plan.is_chief:
            require_writable_model_dir(settings)
        self._train(plan)

    # ------------------------------------------------------------------ serve (PSS)

    def _serve(self, plan: StrategyPlan) -> None:
        server = tf.distribute.Server(
            tf.train.ClusterSpec(plan.cluster_spec),
            job_name=plan.task_type,
            task_index=plan.task_index,
            protocol="grpc",
            config=_server_config(plan),
            start=True,
        )
        own = tf.compat.v1.ConfigProto(
            device_filters=[f"/job:{plan.task_type}/task:{plan.task_index}"]
        )
        coordinator = {coordination.task_id("chief", 0)}
        # Deleting the job stops every task at once: the coordinator's last checkpoint reads the
        # variables here, and its step in flight ends here.
        stopping.serves(plan.hosts("chief"))
        coordination.serve_until_done(
            self.cluster.task_name,
            plan.task_type,
            plan.task_index,
            server.target,
            own,
            coordinator,
            "coordinator",
        )

    def _signal_done(self, plan: StrategyPlan) -> None:
        targets = [
            (job, index, host)
            for job in ("ps", "worker")
            for index, host in enumerate(plan.hosts(job))
        ]
        coordination.signal_done_to(
            self.cluster.task_name,
            coordination.task_id("chief", 0),
            targets,
            DONE_SIGNAL_TIMEOUT_SECS,
        )

    # ------------------------------------------------------------------ train / coordinate

    def _strategy(self, plan: StrategyPlan) -> tuple[Any, Any, Any]:
        """(strategy, cluster resolver, coordinator) for ``plan``."""
        if plan.kind in ("default", "mirrored"):
            if plan.kind == "mirrored":
                return tf.distribute.MirroredStrategy(devices=list(plan.devices)), None, None
            return tf.distribute.get_strategy(), None, None
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(plan.cluster_spec),
            task_type=plan.task_type,
            task_id=plan.task_index,
            rpc_layer="grpc",
        )
        if plan.kind == "multi_worker_mirrored":
            return (
                tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver),
                resolver,
                None,
            )
        coordination.wait_for_ps(self.cluster, self.settings.startup_timeout_secs)
        keepalive.ensure_keepalive()  # before the strategy makes the coordinator's channels
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        return strategy, resolver, tf.distribute.coordinator.ClusterCoordinator(strategy)

    def _build(self, strategy: Any) -> tuple[Any, Any]:
        """Call ``build_model`` in the strategy's scope; return (model, optimizer)."""
        trainer = self.trainer
        with strategy.scope():
            result = trainer.build_model()
            if isinstance(result, tuple):
                model, loss, optimizer = result
                model.compile(optimizer=optimizer, loss=loss)
            else:
                model = result
                loss = getattr(model, "loss", None)
                optimizer = getattr(model, "optimizer", None)
        if optimizer is None:
            raise SettingsError(
                f"{type(trainer).__name__}.build_model() returned a model that is not compiled: "
                "compile it (model.compile(optimizer=..., loss=...)) or return "
                "(model, loss, optimizer)"
            )
        trainer.model, trainer.loss, trainer.optimizer = model, loss, optimizer
        return model, optimizer

    def _train(self, plan: StrategyPlan) -> None:
        settings, cluster, trainer = self.settings, self.cluster, self.trainer
        task = cluster.task_name
        strategy, resolver, coordinator = self._strategy(plan)
        trainer.strategy = strategy
        trainer.global_batch_size = settings.batch_size * plan.replicas
        model, optimizer = self._build(strategy)
        keras = None if self.step_fn is not None else fit_keras(trainer, model, plan)
        own = keras is not None and own_loop(keras, plan)
        if own:
            prepare(model, trainer)  # its variables exist before a checkpoint restores them
        keeper = CheckpointKeeper(settings, plan, task, model, optimizer, strategy)
        checkpoint = keeper.latest()
        if checkpoint:
            keeper.restore(checkpoint)
        elif settings.checkpoint_path:
            init = trainer.get_init_fn(settings.checkpoint_path)
            if init is not None:
                init(model)
                # A warm start is a new training run from those weights: its step starts at 0
                # even when fn restored a whole model (a compiled model tracks its optimizer).
                optimizer.iterations.assign(0)
        start = int(optimizer.iterations.numpy())
        if plan.is_chief:
            print(
                f"[{task}] chief; resuming from checkpoint {checkpoint} (global step {start})"
                if checkpoint
                else f"[{task}] chief; no checkpoint in model_dir, initialising",
                flush=True,
            )
        how = "your train_batch under strategy.run" if keras is None else f"{keras.__name__} fit"
        if own:
            how = (
                f"Keras 3 train_step through TaaS's own fit (Keras 3's fails under "
                f"{KERAS3_NO_FIT[plan.kind]})"
            )
        print(
            f"[{task}] model ready {process_age():.2f}s after start; global step {start}; "
            f"steps: {how}",
            flush=True,
        )
        keeper.watch_sigterm(resolver)
        if plan.kind == "parameter_server":
            stopping.needs(plan.hosts("ps"))  # the variables its checkpoint saves live there
        loop = TrainLoop(task, settings, start, plan.is_chief)
        if not loop.running:
            line = nothing_to_train(
                task, start, settings.max_steps, settings.model_dir, plan.is_chief, checkpoint
            )
            print(line, flush=True)
        else:
            workers = len(plan.hosts("worker"))
            if keras is not None and own:
                run_own_fit(trainer, model, keras, coordinator, loop, keeper, workers)
            elif keras is not None:
                run_fit(trainer, model, keras, coordinator, loop, keeper, workers)
            else:
                assert self.step_fn is not None  # no fit: the trainer's own step
                run_custom_steps(
                    self.step_fn, trainer, strategy, coordinator, loop, keeper, workers
                )
            if coordinator is not None:
                coordinator.join()
            loop.finish()
        keeper.stop_watching()
        if plan.kind == "multi_worker_mirrored":
            trainer._exports = ExportRequests()
        trainer.after_train(model, plan.is_chief)
        if trainer._exports is not None:
            export_together(trainer._exports, model, task, plan.is_chief)
            trainer._exports = None
        keeper.finish(loop.global_step)
        if plan.kind == "parameter_server":
            self._signal_done(plan)
        if plan.kind == "multi_worker_mirrored":
            self._leave_together(plan)

    def _leave_together(self, plan: StrategyPlan) -> None:
        """Synchronous workers leave together: worker 0 hosts TensorFlow's coordination
        service, and a worker still finishing (its after_train, its last save) when worker 0
        exits fails with UnavailableError. A barrier of that service, then worker 0 lingers a
        moment so every reply gets out before its server goes.

        A peer lost here (its heartbeat, the coordination service) changes nothing: this
        worker finished training and its final checkpoint is saved, so it exits 0. The barrier
        waits in a thread with a deadline of its own: with worker 0 frozen (stopped, its node
        hung) no service is left to time the barrier out."""
        timeout = self.settings.startup_timeout_secs
        outcome: list[BaseException | None] = []
        waiter = threading.Thread(
            target=_wait_at_end_barrier,
            args=(int(timeout * 1000), outcome),
            name="taas-end-barrier",
            daemon=True,  # the process ends with os._exit: a hung wait cannot hold it
        )
        waiter.start()
        waiter.join(timeout + END_BARRIER_GRACE_SECS)
        error = outcome[0] if outcome else None
        if not outcome or (error is not None and peer_lost(error)):
            why = (
                f"{type(error).__name__}: {_first_line(error)}"
                if error is not None
                else f"no answer from the coordination service in {timeout:.0f} s"
            )
            print(
                f"[{self.cluster.task_name}] a peer was lost after training finished "
                f"({why}); this worker's part is saved: done",
                flush=True,
            )
            return
        if error is not None:
            raise error
        if plan.task_type in ("chief", "worker") and plan.task_index == 0:
            time.sleep(END_LINGER_SECS)


def _wait_at_end_barrier(timeout_ms: int, outcome: list[BaseException | None]) -> None:
    from tensorflow.python.eager import context  # wait_at_barrier has no public alias

    try:
        context.context().wait_at_barrier("taas_training_end", timeout_ms)
        outcome.append(None)
    except Exception as exc:
        outcome.append(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def refuse_custom_step_with_fit_hooks(trainer: KerasHooks, settings: Any) -> None:
    """A custom ``train_batch`` runs no ``fit``: its hooks and settings would do nothing."""
    hooks = [name for name in FIT_ONLY_HOOKS if overrides_hook(trainer, name)]
    if hooks:
        raise SettingsError(
            f"{type(trainer).__name__} overrides train_batch(batch), so fit does not run, and "
            f"{', '.join(hooks)} would never be called: drop train_batch to run fit, or "
            "call your callbacks and validation from your own step"
        )
    refuse_fit_only(settings, "a custom train_batch(batch) step")


def configure_devices(settings: Any, plan: StrategyPlan, gpus: list[Any]) -> None:
    """Device options, before TensorFlow's runtime starts (it cannot change them later)."""
    tf.config.set_soft_device_placement(settings.allow_soft_placement)
    tf.debugging.set_log_device_placement(settings.log_device_placement)
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, settings.gpu_memory_growth)
    if plan.kind == "mirrored" and not gpus:
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * len(plan.devices)
        )
    if plan.kind == "parameter_server":
        tf.config.threading.set_inter_op_parallelism_threads(plan.inter_op_threads)


def _server_config(plan: StrategyPlan) -> Any:
    return tf.compat.v1.ConfigProto(inter_op_parallelism_threads=plan.inter_op_threads)


def _describe(plan: StrategyPlan) -> str:
    if plan.role == "evaluate":
        return "evaluator: evaluates each new checkpoint"
    if plan.role == "serve":
        return f"serving as {plan.task_type}:{plan.task_index} until the coordinator is done"
    if plan.role == "coordinate":
        workers = len(plan.hosts("worker"))
        return f"coordinating {workers} worker(s) and {len(plan.hosts('ps'))} PS task(s)"
    if plan.kind == "multi_worker_mirrored":
        return f"{plan.replicas} workers in sync, this one {plan.task_type}:{plan.task_index}"
    if plan.kind == "mirrored":
        return f"{len(plan.devices)} replicas: {', '.join(plan.devices)}"
    return "one process"
