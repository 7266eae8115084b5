"""TensorFlow 2: checkpoints, summaries and SIGTERM for the task that runs the loop.

    CheckpointKeeper(settings, plan, task, model, optimizer, strategy)
        .latest() .restore(path)        resume (every replica reads the chief's model_dir)
        .after_step(step, loss, metrics) chief: summaries, periodic checkpoints; SIGTERM check
        .epoch_end(step, values)        chief: summaries of fit's validation metrics
        .stop_watching()                after the loop: SIGTERM is plain again
        .changed_since_save(maybe)      fit has returned: its callbacks may have changed the model
        .finish(step)                   chief: the final checkpoint
        .watch_sigterm(resolver)        from here SIGTERM means "checkpoint, then exit 143"

Only the chief writes (``ckpt-<global step>`` in ``model_dir``, the step in the name as in graph
mode: the optimizer's update count, which is what a resumed run starts from); under
ParameterServerStrategy it reads and writes every file itself (the PS tasks, which hold the
variables, need not see ``model_dir``: ``experimental_io_device``, as graph mode's unsharded
saver). Under
MultiWorkerMirroredStrategy saving is collective (every worker must save, at the same step): the
others save to a scratch directory they delete, and a time-based checkpoint is decided by the
chief's clock, shared in a small all-reduce every ``AGREE_EVERY_STEPS`` steps (step-based ones
need no agreement).

SIGTERM, what Kubernetes sends before it kills a pod: under MultiWorkerMirroredStrategy
TensorFlow's ``PreemptionCheckpointHandler`` makes every worker agree on the step to stop at
(the signal reaches one pod, the checkpoint needs them all);
elsewhere (one process, the ParameterServerStrategy coordinator) a flag checked after each step.
Either way the chief saves and every task raises :class:`~taas.core.exit_codes.PreemptedError`
(exit 143, which ``restartPolicy: ExitCode`` restarts); the restarted job resumes there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from taas.core import stopping
from taas.core.exit_codes import PreemptedError
from taas.core.settings import TrainerSettings
from taas.keras.strategies import StrategyPlan

MAX_TO_KEEP = 5
AGREE_EVERY_STEPS = 10
#: The ParameterServerStrategy coordinator's device, as TensorFlow names it (`strategies`).
COORDINATOR_DEVICE = "/job:chief/replica:0/task:0/device:CPU:0"


class CheckpointKeeper:
    """The chief's checkpoints and summaries, and every loop task's SIGTERM handling."""

    def __init__(
        self,
        settings: TrainerSettings,
        plan: StrategyPlan,
        task: str,
        model: Any,
        optimizer: Any,
        strategy: Any = None,
    ) -> None:
        self.settings, self.plan, self.task, self.strategy = settings, plan, task, strategy
        self.collective = plan.kind == "multi_worker_mirrored"
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        self.optimizer = optimizer
        # Created now, on every worker alike: a synchronous strategy broadcasts a new
        # variable's value, so one created later by the chief's first save alone would hang.
        _ = self.checkpoint.save_counter
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, settings.model_dir, max_to_keep=MAX_TO_KEEP, checkpoint_name="ckpt"
        )
        # Under ParameterServerStrategy the variables live on the PS tasks, and TensorFlow has
        # each one write (and read) its own variables' files: on a cluster, a model_dir no PS
        # has mounted fails the first save ("ckpt-100_temp; No such file or directory"). All
        # of it goes through the coordinator instead, which owns model_dir.
        self.options = (
            tf.train.CheckpointOptions(experimental_io_device=COORDINATOR_DEVICE)
            if plan.kind == "parameter_server"
            else None
        )
        self.writes = plan.is_chief
        self.saved_step: int | None = None
        self._changed = False
        self._saved_at = time.monotonic()
        self._summary_mark: tuple[float, int] | None = None
        self._writer = tf.summary.create_file_writer(settings.model_dir) if self.writes else None
        self._handler: Any = None
        self._step = 0

    # ------------------------------------------------------------------ resume

    def latest(self) -> str | None:
        """The newest checkpoint in ``model_dir`` (None when there is none)."""
        return tf.train.latest_checkpoint(self.settings.model_dir)

    def restore(self, path: str) -> None:
        """Restore model and optimizer from ``path`` (the optimizer's slots when created)."""
        self.checkpoint.restore(path, options=self.options).expect_partial()

    # ------------------------------------------------------------------ SIGTERM

    def watch_sigterm(self, resolver: Any) -> None:
        """From now on SIGTERM saves a checkpoint and ends the task with exit 143."""
        if self.collective:
            config = tf.distribute.experimental.TerminationConfig(
                exit_fn=self._preempted, save_fn=lambda: self.save(self._step)
            )
            self._handler = tf.distribute.experimental.PreemptionCheckpointHandler(
                resolver, self.manager, termination_config=config
            )
            return
        stopping.checkpoint_first()

    def stop_watching(self) -> None:
        """After the loop: SIGTERM ends the task at once again (nothing left to checkpoint)."""
        stopping.plain()
        # TensorFlow's handler keeps a thread blocked on the coordination service; without
        # this (private, hence getattr) release it dies with a traceback when the chief exits.
        stop = getattr(self._handler, "_stop_cluster_wise_termination_watcher_thread", None)
        if stop is not None:
            stop()

    def _preempted(self) -> None:
        where = f"checkpoint at global step {self._step}" if self.writes else "checkpoint saved"
        raise PreemptedError(f"SIGTERM: stopped after a {where}; exit 143 (retryable)")

    # ------------------------------------------------------------------ steps

    def after_step(
        self, step: int, loss: float | None, metrics: Mapping[str, float] | None = None
    ) -> None:
        """After each finished step: summaries (the loss, ``metrics``) and checkpoints when
        due, then SIGTERM."""
        self._step = step
        settings = self.settings
        summaries = settings.save_summaries_steps
        if self.writes and summaries and step % summaries == 0:
            self._summaries(step, loss, metrics or {})
        if (self.writes or self.collective) and self._checkpoint_due(step):
            self.save(step)
        if self._handler is not None:
            self._handler.save_checkpoint_if_preempted()
        elif stopping.requested():
            self.save(step)
            self._preempted()

    def _checkpoint_due(self, step: int) -> bool:
        settings = self.settings
        if settings.save_checkpoints_steps:
            return step % settings.save_checkpoints_steps == 0
        if not settings.save_checkpoints_secs:
            return False
        due = self.writes and time.monotonic() - self._saved_at >= settings.save_checkpoints_secs
        if not self.collective:
            return due
        if step % AGREE_EVERY_STEPS:
            return False
        return self._agree(due)

    def _agree(self, due: bool) -> bool:
        """True on every worker when one says so (one all-reduce of a flag): the chief, whose
        clock decides time-based checkpoints; any that ran callbacks (``changed_since_save``)."""
        flag = tf.constant(1.0 if due else 0.0)

        def replica_fn(value: Any) -> Any:
            context = tf.distribute.get_replica_context()
            return context.all_reduce(tf.distribute.ReduceOp.SUM, value)

        total = self.strategy.run(replica_fn, args=(flag,))
        return float(self.strategy.experimental_local_results(total)[0]) > 0

    def epoch_end(self, step: int, values: Mapping[str, float]) -> None:
        """Chief: ``values`` (fit's validation metrics) as summaries at global step ``step``."""
        if self._writer is None or not self.settings.save_summaries_steps:
            return
        with self._writer.as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(name, value)

    def _summaries(self, step: int, loss: float | None, metrics: Mapping[str, float]) -> None:
        assert self._writer is not None
        now = time.monotonic()
        with self._writer.as_default(step=step):
            if loss is not None:
                tf.summary.scalar("loss", loss)
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
            if self._summary_mark is not None:
                then, before = self._summary_mark
                if now > then and step > before:
                    tf.summary.scalar("global_step/sec", (step - before) / (now - then))
        self._summary_mark = (now, step)

    def save(self, step: int, again: bool = False) -> None:
        """Chief: write ``ckpt-<step>`` (once per step, unless ``again``); other synchronous
        workers: a scratch copy they delete (the save is collective); other tasks: nothing."""
        self._saved_at = time.monotonic()
        again = again and self.saved_step == step
        if self.saved_step == step and not again:
            return
        self.saved_step = step
        if self.writes:
            # Named by the updates it holds: under ParameterServerStrategy steps still in flight
            # may have reached the variables, so that can be a few more than the loop's count.
            number = int(self.optimizer.iterations.numpy())
            path = self.manager.save(checkpoint_number=number, options=self.options)
            why = " again: the model as fit's callbacks left it" if again else ""
            print(f"[{self.task}] saved checkpoint {os.path.basename(path)}{why}", flush=True)
        elif self.collective:
            scratch = tempfile.mkdtemp(prefix="taas-ckpt-")
            try:
                scratch_manager = tf.train.CheckpointManager(self.checkpoint, scratch, 1)
                scratch_manager.save(checkpoint_number=step)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)

    def changed_since_save(self, maybe: bool) -> None:
        """``fit`` has returned; ``maybe``: the user's callbacks ran after the last step's
        checkpoint and may have changed the model (``EarlyStopping(restore_best_weights=True)``
        sets the best epoch's weights in ``on_train_end``; ``ReduceLROnPlateau`` lowers the
        learning rate at an epoch's end), so :meth:`finish` writes the final checkpoint even at
        a step already saved. Called on every task that runs ``fit``; under
        MultiWorkerMirroredStrategy the workers agree (the save is collective, and a worker's
        ``callbacks()`` may differ from the chief's)."""
        self._changed = self._agree(maybe) if self.collective else maybe

    def finish(self, step: int) -> None:
        """After the loop: the chief's final checkpoint (when checkpoints are on), of the model
        as it is now."""
        settings = self.settings
        if settings.save_checkpoints_steps or settings.save_checkpoints_secs:
            self.save(step, again=self._changed)
        if self._writer is not None:
            self._writer.flush()
