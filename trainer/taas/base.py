"""The base class users subclass: hooks in, distributed graph-mode training out."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from taas import coordination
from taas.cluster import ClusterInfo
from taas.devices import session_config, tower_devices
from taas.exporter import ModelExporter, raw_session
from taas.progress import ProgressReporter, nothing_to_train
from taas.session import ChiefSessionCreator, WorkerSessionCreator
from taas.settings import SettingsError, TrainerSettings
from taas.towers import build_towers

v1 = tf.compat.v1
InitFn = Callable[[Any], None]


class DistributedTrainer:
    """Subclass, fill in the hooks you need, run with ``MyTrainer.main()``.

    The loop the hooks fire in, on every training task (PS tasks only serve variables)::

        graph    global_step = <made by the base class, on a PS>
                 with variables round-robin over the PS tasks, ops on this worker:
                   result = build_model(global_step, is_chief, sync, num_replicas)
                     optimizer | None               old style: you built the train op
                     loss | (loss, optimizer)       base builds the train op (sync wrap)
                     loss_fn | (loss_fn, optimizer) base builds one tower per GPU, averages
                   init_fn = get_init_fn(checkpoint_path)   chief, only without a checkpoint
        session  chief: restore latest checkpoint in model_dir, else init + init_fn(session)
                 others: poll (0.1 s) until the chief has initialised
        loop     while global step < max_steps:
                     stop = train(session, global_step, is_chief)   one step; True ends early
                     progress line every N steps/secs; chief: checkpoints, summaries
                 (already at max_steps, e.g. a re-run on a finished model dir: one line
                 "nothing to train", no steps; after_train still runs, every task exits 0)
        end      after_train(session, is_chief)                    evaluate, export_model()
                 session closed (chief: final checkpoint); every PS told "done"; exit 0

    Inside the hooks ``self.settings`` (:class:`~taas.settings.TrainerSettings`) and
    ``self.cluster`` (:class:`~taas.cluster.ClusterInfo`) are set; after a richer-form
    ``build_model`` so are ``self.train_op``, ``self.loss`` and ``self.optimizer``.
    An ``evaluator`` task calls :meth:`evaluate` on every new checkpoint instead.
    """

    settings: TrainerSettings
    cluster: ClusterInfo = ClusterInfo()
    train_op: Any = None
    loss: Any = None
    optimizer: Any = None
    global_step: Any = None
    _step_after: Any = None
    _done_session: Any = None
    _model_exporter: ModelExporter | None = None
    _step_global: int | None = None
    _step_loss: float | None = None
    _step_examples: int | None = None

    def __init__(self) -> None:
        self._model_exporter = None

    # ----------------------------------------------------------------- hooks (override)

    def build_model(self, global_step: Any, is_chief: bool, sync: bool, num_replicas: int) -> Any:
        """Build the graph around ``global_step``; return an optimizer, a loss, or a loss_fn.

        Runs once, before any session, inside the replica device setter. Old style: build the
        train op yourself (in ``sync`` mode wrap the optimizer in ``SyncReplicasOptimizer`` over
        ``num_replicas``) and return the optimizer (or None). Richer form: return the loss
        tensor, ``(loss, optimizer)``, or a zero-argument ``loss_fn`` (called once per tower;
        create variables with ``tf.compat.v1.get_variable``) and the base class does the rest.
        """
        raise NotImplementedError(f"{type(self).__name__} must override build_model()")

    def get_init_fn(self, checkpoint_path: str) -> InitFn | None:
        """Return ``fn(session)`` to warm-start from ``checkpoint_path``, or None.

        Called on the chief after ``build_model`` when ``checkpoint_path`` is set and the model
        dir holds no checkpoint (a restart resumes from the model dir instead).
        """
        return None

    def train(self, session: Any, global_step: Any, is_chief: bool) -> bool | None:
        """Run one training step; return True to stop early.

        The default runs the base-built train op (``self.train_step(session)``), for models fed
        by a ``tf.data`` pipeline. Override to feed placeholders: ``self.train_step(session,
        feed_dict)`` (progress gets the loss) or your own ``session.run(...)`` (old style).
        """
        if self.train_op is None:
            raise NotImplementedError(
                f"{type(self).__name__}: build_model() returned an optimizer, so override "
                "train() to run your train op (or return the loss from build_model())"
            )
        self.train_step(session)
        return False

    def after_train(self, session: Any, is_chief: bool) -> None:
        """Called once after the loop, session still open: evaluate, ``export_model``."""

    def create_optimizer(self) -> Any:
        """Optimizer for the richer form when build_model returns only a loss."""
        return v1.train.GradientDescentOptimizer(self.settings.learning_rate)

    def evaluate(self, session: Any, global_step: int) -> None:
        """Evaluator task only: called with each new checkpoint restored into ``session``."""

    # ----------------------------------------------------------------- helpers (call)

    def train_step(
        self, session: Any, feed_dict: dict[Any, Any] | None = None, examples: int | None = None
    ) -> float:
        """Run the base-built train op once; return the loss (also shown in progress lines)."""
        _, loss, step = session.run(
            [self.train_op, self.loss, self._step_after], feed_dict=feed_dict
        )
        self._step_global = int(step)
        self._step_loss = float(loss)
        self._step_examples = examples
        return float(loss)

    def init_model_exporter(
        self,
        export_dir: str,
        input_tensors: dict[str, Any],
        output_tensors: dict[str, Any],
        assets_collection: Any = None,
        legacy_init_op: Any = None,
        main_op: Any = None,
    ) -> None:
        """Prepare a SavedModel export (call in build_model); write it with export_model()."""
        self._model_exporter = ModelExporter(
            export_dir, input_tensors, output_tensors, assets_collection, legacy_init_op, main_op
        )

    def export_model(self, session: Any) -> str:
        """Write the SavedModel prepared by init_model_exporter(); return its directory.

        Only the chief writes (workers of one job would race on the same directory).
        """
        if self._model_exporter is None:
            raise AssertionError(
                "Model exporter has not been initialised: call init_model_exporter() in "
                "build_model() first."
            )
        if not self.cluster.is_chief:
            print(
                f"[{self.cluster.task_name}] export_model: only the chief exports; skipped",
                flush=True,
            )
            return self._model_exporter.export_dir
        return self._model_exporter.save(session)

    @classmethod
    def main(cls, argv: list[str] | None = None) -> None:
        """Run this trainer as a program (reads settings and cluster, exits with the code)."""
        from taas.runner import run

        run(cls, argv)

    # ----------------------------------------------------------------- engine

    def configure(self, settings: TrainerSettings, cluster: ClusterInfo) -> None:
        """Set the settings and cluster (the runner does this before :meth:`run`)."""
        self.settings = settings
        self.cluster = cluster

    def run(self) -> None:
        """Play this task's part: serve (PS), evaluate (evaluator), or train."""
        cluster, settings = self.cluster, self.settings
        config = session_config(settings, cluster)
        if cluster.task_type == "evaluator":
            self._run_evaluator(config)
            return
        if cluster.distributed and not cluster.ps_tasks:
            raise SettingsError(
                "cluster has no 'ps' tasks: graph-mode training keeps the variables on PS "
                "tasks; add a PS replica to the TFJob (or run a single process)"
            )
        server = None
        if cluster.distributed:
            server = tf.distribute.Server(
                v1.train.ClusterSpec(cluster.cluster_dict()),
                job_name=cluster.task_type,
                task_index=cluster.task_index,
                config=config,
                start=True,
            )
        if cluster.task_type == "ps":
            coordination.serve_ps(cluster, server, config)
            return
        graph = tf.Graph()
        with graph.as_default():
            parts = self._build_graph()
            self._train(parts, server.target if server else "", config)
            if server is not None:
                self._signal_done(server.target, config, parts["done"])

    def _signal_done(self, target: str, config: Any, done_op: Any) -> None:
        """Tell every PS this task is finished (errors only warn: training is already done)."""
        # Never closed: closing a session whose PS just exited can block; the process exits next.
        self._done_session = v1.Session(target, config=config)
        try:
            self._done_session.run(done_op)
        except tf.errors.OpError as exc:
            # The last signal can race with the PS exiting: it got the token, the reply is lost.
            print(
                f"[{self.cluster.task_name}] note: PS done-signal: {exc.message[:120]}", flush=True
            )

    def _device_fn(self, worker_device: str) -> Any:
        if not self.cluster.distributed:
            return worker_device or None
        return v1.train.replica_device_setter(
            cluster=v1.train.ClusterSpec(self.cluster.cluster_dict()),
            worker_device=worker_device,
        )

    def _replicas(self) -> tuple[int, int]:
        """(replicas_to_aggregate, total_num_replicas) for sync mode."""
        settings, cluster = self.settings, self.cluster
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

    def _build_graph(self) -> dict[str, Any]:
        cluster, settings = self.cluster, self.settings
        parts: dict[str, Any] = {"init_fn": None, "sync_opt": None, "barrier": None}
        with v1.device(self._device_fn(cluster.device)):
            self.global_step = v1.train.get_or_create_global_step()
            result = self.build_model(
                self.global_step, cluster.is_chief, settings.sync, cluster.num_replicas
            )
            self._finish_model(result)
            sync_opt = self.optimizer
            if isinstance(sync_opt, v1.train.SyncReplicasOptimizer):
                parts["sync_opt"] = sync_opt
                parts["hook"] = sync_opt.make_session_run_hook(cluster.is_chief)
                parts["release"] = sync_opt.get_init_tokens_op(cluster.num_replicas)
                if cluster.distributed:
                    parts["barrier"] = coordination.StartBarrier(cluster, self._replicas()[0])
            elif settings.sync:
                print(
                    f"[{cluster.task_name}] WARNING: sync=true but build_model returned "
                    f"{type(sync_opt).__name__}, not a SyncReplicasOptimizer: updates are async",
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
                    parts["init_fn"] = self.get_init_fn(settings.checkpoint_path)
            parts["saver"] = v1.train.Saver(sharded=False, max_to_keep=5, allow_empty=True)
        if cluster.distributed:
            parts["done"] = coordination.done_signal_op(cluster)
        return parts

    def _finish_model(self, result: Any) -> None:
        """Turn build_model's result into train_op/loss/optimizer (the richer form)."""
        optimizer_type = v1.train.Optimizer
        if result is None or isinstance(result, optimizer_type):
            self.optimizer = result
            return
        loss, optimizer = result if isinstance(result, tuple) else (result, None)
        optimizer = optimizer if optimizer is not None else self.create_optimizer()
        if not isinstance(optimizer, optimizer_type):
            raise TypeError(
                "build_model/create_optimizer must give a tf.compat.v1.train optimizer "
                f"(graph mode), got {type(optimizer).__name__}"
            )
        if self.settings.sync and not isinstance(optimizer, v1.train.SyncReplicasOptimizer):
            aggregate, total = self._replicas()
            optimizer = v1.train.SyncReplicasOptimizer(
                optimizer, replicas_to_aggregate=aggregate, total_num_replicas=total
            )
        if callable(loss):
            devices = tower_devices(self.settings, self.cluster)
            self.train_op, self.loss = build_towers(
                loss, optimizer, devices, self.global_step, self._device_fn
            )
        else:
            self.loss = loss
            self.train_op = optimizer.minimize(loss, global_step=self.global_step)
        with tf.control_dependencies([self.train_op]):
            self._step_after = tf.identity(self.global_step.read_value())
        v1.summary.scalar("loss", self.loss)
        self.optimizer = optimizer

    def _hooks(self, parts: dict[str, Any], scaffold: Any) -> list[Any]:
        settings = self.settings
        hooks = [parts["hook"]] if parts.get("hook") else []
        if not self.cluster.is_chief:
            return hooks
        if settings.save_checkpoints_steps or settings.save_checkpoints_secs:
            hooks.append(
                v1.train.CheckpointSaverHook(
                    settings.model_dir,
                    save_steps=settings.save_checkpoints_steps,
                    save_secs=None
                    if settings.save_checkpoints_steps
                    else settings.save_checkpoints_secs,
                    scaffold=scaffold,
                )
            )
        if settings.save_summaries_steps:
            hooks.append(
                v1.train.SummarySaverHook(
                    save_steps=settings.save_summaries_steps,
                    output_dir=settings.model_dir,
                    scaffold=scaffold,
                )
            )
        return hooks

    def _train(self, parts: dict[str, Any], target: str, config: Any) -> None:
        cluster, settings = self.cluster, self.settings
        task = cluster.task_name
        user_init = parts["init_fn"]
        scaffold = v1.train.Scaffold(
            saver=parts["saver"],
            init_fn=(lambda _scaffold, session: user_init(session)) if user_init else None,
        )
        timeout = settings.startup_timeout_secs
        creator: Any
        checkpoint = v1.train.latest_checkpoint(settings.model_dir)  # workers: if shared
        if cluster.is_chief:
            print(
                f"[{task}] chief; resuming from checkpoint {checkpoint}"
                if checkpoint
                else f"[{task}] chief; no checkpoint in model_dir, initialising",
                flush=True,
            )
            creator = ChiefSessionCreator(
                cluster,
                timeout,
                scaffold=scaffold,
                master=target,
                config=config,
                checkpoint_dir=settings.model_dir,
            )
        else:
            creator = WorkerSessionCreator(
                cluster, timeout, scaffold=scaffold, master=target, config=config
            )
        hooks = self._hooks(parts, scaffold)
        session = v1.train.MonitoredSession(
            session_creator=creator, hooks=hooks, stop_grace_period_secs=3
        )
        raw = raw_session(session)
        step = int(raw.run(self.global_step))
        print(
            f"[{task}] session ready {process_age():.2f}s after start; global step {step}",
            flush=True,
        )
        if parts["barrier"] is not None:
            parts["barrier"].wait(raw, timeout, task)
        if step >= settings.max_steps:
            line = nothing_to_train(
                task, step, settings.max_steps, settings.model_dir, cluster.is_chief, checkpoint
            )
            print(line, flush=True)
        progress = ProgressReporter(
            task,
            settings.max_steps,
            settings.batch_size,
            settings.log_every_steps,
            settings.log_every_secs,
        )
        first = True
        while step < settings.max_steps and not session.should_stop():
            self._step_global = None
            self._step_loss = None
            self._step_examples = None
            stop = self.train(session, self.global_step, cluster.is_chief)
            step = (
                self._step_global
                if self._step_global is not None
                else int(raw_session(session).run(self.global_step))
            )
            progress.step(step, self._step_loss, self._step_examples)
            if first:
                print(f"[{task}] first step done {process_age():.2f}s after start", flush=True)
                first = False
            if stop:
                print(f"[{task}] train() returned True: stopping early", flush=True)
                break
        if progress.pending:
            progress.emit(step)
        print(
            f"[{task}] training done: {progress.local_step} local steps, global step {step}, "
            f"{progress.examples_per_sec:.1f} ex/s",
            flush=True,
        )
        self.after_train(raw_session(session), cluster.is_chief)  # no hooks fire after the loop
        if cluster.is_chief and parts.get("release") is not None:
            raw.run(parts["release"])  # unblock sync workers waiting for a token
        session.close()

    def _run_evaluator(self, config: Any) -> None:
        """Evaluate each new checkpoint in model_dir until one reaches max_steps."""
        settings, task = self.settings, self.cluster.task_name
        if type(self).evaluate is DistributedTrainer.evaluate:
            print(
                f"[{task}] evaluator: {type(self).__name__} has no evaluate(); exiting", flush=True
            )
            return
        graph = tf.Graph()
        with graph.as_default():
            self.global_step = v1.train.get_or_create_global_step()
            self._finish_model(self.build_model(self.global_step, False, False, 1))
            saver = v1.train.Saver(allow_empty=True)
        seen = None
        deadline = time.monotonic() + settings.startup_timeout_secs
        while True:
            checkpoint = v1.train.latest_checkpoint(settings.model_dir)
            if checkpoint and checkpoint != seen:
                seen = checkpoint
                deadline = time.monotonic() + settings.startup_timeout_secs
                with v1.Session(graph=graph, config=config) as session:
                    saver.restore(session, checkpoint)
                    step = int(session.run(self.global_step))
                    print(f"[{task}] evaluating {checkpoint}", flush=True)
                    self.evaluate(session, step)
                if step >= settings.max_steps:
                    return
            elif time.monotonic() > deadline:
                from taas.exit_codes import PeerUnreachableError

                raise PeerUnreachableError(
                    f"[{task}] no new checkpoint in {settings.model_dir} for "
                    f"{settings.startup_timeout_secs:.0f}s (startup_timeout_secs)"
                )
            time.sleep(1.0)


def process_age() -> float:
    """Seconds since this process started (Linux /proc; else since taas was imported)."""
    try:
        with open("/proc/self/stat") as stat:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
        import os

        return up - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


_IMPORTED = time.monotonic()
CaicloudDistTensorflowBase = DistributedTrainer

__all__ = ["CaicloudDistTensorflowBase", "DistributedTrainer", "process_age"]
