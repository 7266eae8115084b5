"""The graph-mode engine: one task of a between-graph replicated ``tf.compat.v1`` job.

:class:`GraphEngine` implements :class:`taas.core.engine.Engine` for
:class:`~taas.graph.trainer.DistributedTrainer`. By task type:

- ``ps``: start the gRPC server and serve variables until every trainer said "done"
  (``taas.runtime.coordination``);
- ``evaluator``: evaluate each new checkpoint (``taas.graph.evaluator``);
- chief and workers: check the model dir (chief), start the server, build the graph
  (``taas.graph.model``), create the session (``taas.graph.session``: the chief restores or
  initialises, the others poll), run the shared loop (``taas.core.loop``), call ``after_train``,
  close the session and tell every PS "done".

The TensorFlow 2 engine (``taas.keras.engine``) is a sibling of this class, not a subclass: it
shares ``taas.core.loop`` and the runner around it, not the session code here.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from taas.core import stopping
from taas.core.engine import StepLog, StepResult
from taas.core.exit_codes import PreemptedError
from taas.core.loop import train_loop
from taas.core.placement import ClusterInfo
from taas.core.progress_log import nothing_to_train, process_age
from taas.core.settings import SettingsError, TrainerSettings, refuse_fit_only
from taas.graph.devices import session_config
from taas.graph.evaluator import run_evaluator
from taas.graph.exporter import raw_session
from taas.graph.hooks import GraphHooks
from taas.graph.model import GraphModel, build_graph
from taas.graph.session import ChiefSessionCreator, WorkerSessionCreator
from taas.graph.steps import StepRunner
from taas.runtime import coordination
from taas.runtime.preflight import require_writable_model_dir

v1 = tf.compat.v1


class GraphEngine:
    """Drives a :class:`~taas.DistributedTrainer` through one task's part (see the module)."""

    def __init__(
        self, trainer: GraphHooks, settings: TrainerSettings, cluster: ClusterInfo
    ) -> None:
        self.trainer = trainer
        self.settings = settings
        self.cluster = cluster
        self.steps = StepLog()
        self._done_session: Any = None
        trainer.settings = settings
        trainer.cluster = cluster

    def run(self) -> None:
        """Play this task's part: serve (PS), evaluate (evaluator), or train."""
        cluster, settings = self.cluster, self.settings
        refuse_fit_only(settings, "graph mode")
        config = session_config(settings, cluster)
        if cluster.task_type == "evaluator":
            run_evaluator(self.trainer, settings, cluster, config)
            return
        if cluster.distributed and not cluster.ps_tasks:
            raise SettingsError(
                "cluster has no 'ps' tasks: graph-mode training keeps the variables on PS "
                "tasks; add a PS replica to the TFJob (or run a single process)"
            )
        if cluster.is_chief:
            require_writable_model_dir(settings)
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
        with tf.Graph().as_default():
            model = build_graph(self.trainer, settings, cluster)
            self.trainer._taas_steps = StepRunner(model.ops.step_after, self.steps)
            self._train(model, server.target if server else "", config)
            if server is not None:
                self._signal_done(server.target, config, model.done_op)

    def _save_and_stop(self, model: GraphModel, raw: Any) -> None:
        """SIGTERM arrived: save the variables (read from the PS) and end the task with 143."""
        prefix = os.path.join(self.settings.model_dir, "model.ckpt")
        path = model.saver.save(raw, prefix, global_step=model.ops.global_step)
        step = int(raw.run(model.ops.global_step))
        print(f"[{self.cluster.task_name}] saved checkpoint {os.path.basename(path)}", flush=True)
        raise PreemptedError(
            f"SIGTERM: stopped after a checkpoint at global step {step}; exit 143 (retryable)"
        )

    def _signal_done(self, target: str, config: Any, done_op: Any) -> None:
        """Tell every PS this task is finished (errors only warn: training is already done)."""
        # Kept, never closed: closing a session whose PS just exited can block (so can its
        # garbage collection); the process exits next.
        self._done_session = v1.Session(target, config=config)
        try:
            self._done_session.run(done_op)
        except tf.errors.OpError as exc:
            # The last signal can race with the PS exiting: it got the token, the reply is lost.
            print(
                f"[{self.cluster.task_name}] note: PS done-signal: {exc.message[:120]}", flush=True
            )

    def _session(self, model: GraphModel, target: str, config: Any) -> Any:
        """The MonitoredSession: chief restores or initialises (+ init_fn), others poll."""
        cluster, settings = self.cluster, self.settings
        user_init = model.init_fn
        scaffold = v1.train.Scaffold(
            saver=model.saver,
            init_fn=(lambda _scaffold, session: user_init(session)) if user_init else None,
        )
        timeout = settings.startup_timeout_secs
        creator: Any
        if cluster.is_chief:
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
        return v1.train.MonitoredSession(
            session_creator=creator,
            hooks=self._hooks(model, scaffold),
            stop_grace_period_secs=3,
        )

    def _hooks(self, model: GraphModel, scaffold: Any) -> list[Any]:
        settings = self.settings
        hooks: list[Any] = [model.sync_hook] if model.sync_hook is not None else []
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

    def _train(self, model: GraphModel, target: str, config: Any) -> None:
        cluster, settings, trainer = self.cluster, self.settings, self.trainer
        task = cluster.task_name
        checkpoint = v1.train.latest_checkpoint(settings.model_dir)  # workers: if shared
        if cluster.is_chief:
            print(
                f"[{task}] chief; resuming from checkpoint {checkpoint}"
                if checkpoint
                else f"[{task}] chief; no checkpoint in model_dir, initialising",
                flush=True,
            )
        session = self._session(model, target, config)
        raw = raw_session(session)
        step = int(raw.run(model.ops.global_step))
        print(
            f"[{task}] session ready {process_age():.2f}s after start; global step {step}",
            flush=True,
        )
        if model.barrier is not None:
            model.barrier.wait(raw, settings.startup_timeout_secs, task)
        if step >= settings.max_steps:
            line = nothing_to_train(
                task, step, settings.max_steps, settings.model_dir, cluster.is_chief, checkpoint
            )
            print(line, flush=True)

        if cluster.is_chief and cluster.distributed:
            # SIGTERM (the pod stopped): a checkpoint after this step, then 143. The PS tasks
            # stay while the chief runs (`taas.core.stopping.serves`); should one be gone, the
            # chief ends at once.
            stopping.checkpoint_first()
            stopping.needs([host for _, host in cluster.ps_tasks])

        def step_once() -> tuple[StepResult, bool]:
            self.steps.take()  # nothing from before this train() call counts
            stop = trainer.train(session, model.ops.global_step, cluster.is_chief)
            result = self.steps.take() or StepResult()
            if result.global_step is None:
                global_step = int(raw.run(model.ops.global_step))
                result = StepResult(global_step, result.loss, result.examples)
            if stopping.requested() and cluster.is_chief:
                self._save_and_stop(model, raw)
            return result, bool(stop)

        train_loop(task, settings, step, step_once, session.should_stop, cluster.is_chief)
        stopping.plain()  # training is over: nothing left to checkpoint on SIGTERM
        trainer.after_train(raw, cluster.is_chief)  # raw: no hooks fire after the loop
        if cluster.is_chief and model.release_op is not None:
            raw.run(model.release_op)  # unblock sync workers waiting for a token
        session.close()
