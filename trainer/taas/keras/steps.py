"""TensorFlow 2: the two ways the loop's steps run, both feeding the shared ``TrainLoop``.

    run_custom_steps(trainer, strategy, coordinator, loop, keeper)   the user's train(batch)
    run_fit(trainer, model, coordinator, loop, keeper)               Keras fit, tf_keras

Each finished step goes to :class:`taas.core.loop.TrainLoop` (progress lines, the NaN check, the
stop at ``max_steps``), then to the :class:`~taas.keras.checkpoints.CheckpointKeeper`
(summaries, checkpoints, SIGTERM), so a NaN loss never reaches a checkpoint.

Under ParameterServerStrategy steps are closures the coordinator schedules on the workers; the
result of one is known only when fetched. Up to ``window`` steps are kept in flight (so workers
never wait for the coordinator) and each is reported when fetched, in order: the global step a
line shows is the number of steps finished, never merely scheduled.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import tensorflow as tf

from taas.core.engine import StepResult
from taas.core.loop import TrainLoop
from taas.core.settings import SettingsError
from taas.keras.checkpoints import CheckpointKeeper
from taas.keras.hooks import KerasHooks


def window(coordinator: Any, workers: int) -> int:
    """Steps kept in flight beyond the one being fetched (0 without a coordinator)."""
    return 0 if coordinator is None else max(4, 2 * workers)


def report(loop: TrainLoop, keeper: CheckpointKeeper, loss: float | None) -> bool:
    """One more finished step; False when the loop should end."""
    step = loop.global_step + 1
    more = loop.step(StepResult(step, loss))
    keeper.after_step(step, loss)
    return more


def _fetch(value: Any) -> Any:
    return value.fetch() if hasattr(value, "fetch") else value


def run_custom_steps(
    trainer: KerasHooks,
    strategy: Any,
    coordinator: Any,
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    workers: int = 1,
) -> None:
    """Run ``trainer.train`` under ``strategy.run`` until the loop ends."""

    @tf.function
    def step(iterator: Any) -> Any:
        losses = strategy.run(trainer.train, args=(next(iterator),))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    if coordinator is None:
        iterator = iter(strategy.distribute_datasets_from_function(trainer.create_dataset))
        while loop.running:
            if not report(loop, keeper, float(step(iterator))):
                return
        return

    @tf.function
    def per_worker_dataset() -> Any:
        return strategy.distribute_datasets_from_function(trainer.create_dataset)

    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset))
    todo, scheduled = loop.max_steps - loop.global_step, 0
    pending: deque[Any] = deque()
    limit = window(coordinator, workers)
    while loop.running:
        while scheduled < todo and len(pending) <= limit:
            pending.append(coordinator.schedule(step, args=(iterator,)))
            scheduled += 1
        if not pending or not report(loop, keeper, float(_fetch(pending.popleft()))):
            return


def run_fit(
    trainer: KerasHooks,
    model: Any,
    coordinator: Any,
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    workers: int = 1,
) -> None:
    """``model.fit`` over the remaining steps, each finished batch reported to the loop."""
    import tf_keras

    if not isinstance(model, tf_keras.Model):
        raise SettingsError(
            f"{type(trainer).__name__}.build_model() returned a {type(model).__module__}."
            f"{type(model).__name__}, not a tf_keras model: TaaS runs fit with tf_keras "
            "(Keras 3's fit fails under MultiWorkerMirroredStrategy and ParameterServerStrategy,"
            " keras-team/keras#20585). Build it with `import tf_keras as keras`, or override "
            "train(batch) for a custom step"
        )

    class LoopCallback(tf_keras.callbacks.Callback):
        """Reports each finished batch; stops fit when the loop ends."""

        def __init__(self) -> None:
            super().__init__()
            self._supports_tf_logs = True  # PS training hands RemoteValues: fetched in order
            self.pending: deque[Any] = deque()
            self.limit = window(coordinator, workers)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.pending.append(logs)
            while len(self.pending) > self.limit:
                self._report_one()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            while self.pending:
                self._report_one()

        def _report_one(self) -> None:
            logs = _fetch(self.pending.popleft()) or {}
            loss = float(logs["loss"]) if "loss" in logs else None
            if not report(loop, keeper, loss):
                self.model.stop_training = True

    creator = tf_keras.utils.experimental.DatasetCreator(trainer.create_dataset)
    model.fit(
        creator,
        epochs=1,
        steps_per_epoch=loop.max_steps - loop.global_step,
        verbose=0,
        callbacks=[LoopCallback()],
    )
