"""TensorFlow 2: TaaS's own ``fit`` for Keras 3 models where Keras 3's cannot run.

    prepare(model, trainer)                                     before the checkpoint's restore
    run_own_fit(trainer, model, keras, coordinator, loop, keeper, workers)

Keras 3's ``fit`` fails under MultiWorkerMirroredStrategy and ParameterServerStrategy on
TensorFlow 2.21 (keras-team/keras#20585): under the first its build step reduces a batch of
per-replica data with ``strategy.reduce`` ("Attempt to convert a value (PerReplica ...) to a
Tensor"), and it has no ``ClusterCoordinator`` path for the second. What ``fit`` does for a
step works there: the model's own ``train_step`` (its loss, the optimizer's distributed apply,
which all-reduces the gradients, its metrics' updates) under ``strategy.run``. So this module
runs the epochs ``fit`` would, with the pieces TaaS's ``fit`` uses (``taas.keras.fit``,
``taas.keras.steps``):

- ``prepare`` builds the model, its compiled loss and metrics and the optimizer from the
  dataset's element spec (what ``fit``'s build step does, without the data), so a checkpoint
  restores into variables that exist; under ParameterServerStrategy it makes the step count's
  and the metrics' additions atomic (Keras 3's are a read and an assign, which concurrent
  steps on two workers race);
- steps: ``train_step`` under ``strategy.run`` in a ``tf.function``, scheduled on the workers
  under ParameterServerStrategy and fetched in order (:func:`~taas.keras.steps.finished_steps`);
- each step's logs are the compiled metrics read after the step in cross-replica context (each
  metric's state summed over every replica: the value one process computes over the same
  global batches) and ``step_loss`` (:func:`~taas.keras.fit.step_loss`); they go to the loop,
  the checkpoints and the progress as ``fit``'s do (:func:`~taas.keras.fit.report_logs`);
- the user's callbacks run in a Keras ``CallbackList`` with History, called as ``fit`` calls
  them: train and epoch begin and end, each batch's begin and end (not under
  ParameterServerStrategy, as in ``fit``); the metrics are reset at each epoch's start; an
  epoch's logs are the metrics over the epoch, ``step_loss`` (its last step's) and, with
  validation, ``val_*``: ``test_step`` on ``validation_steps`` batches, the metrics reset
  first (one validation iterator for the whole run, as Keras's for a repeating dataset);
- ``model.stop_training`` set by a callback ends training at the batch's or epoch's end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import tensorflow as tf

from taas.core.loop import TrainLoop
from taas.keras.checkpoints import CheckpointKeeper
from taas.keras.fit import (
    STEP_LOSS,
    Epochs,
    last_of_epoch,
    publish_epoch,
    report_logs,
    step_loss,
    stopped,
    user_callbacks,
    validation_steps,
)
from taas.keras.hooks import KerasHooks
from taas.keras.steps import distributed_iterator, finished_steps


def prepare(model: Any, trainer: KerasHooks) -> None:
    """Build ``model``'s variables, its compiled loss's and metrics' and its optimizer's in the
    strategy's scope, from the shapes of ``create_dataset``'s elements (no data is read)."""
    strategy = trainer.strategy
    context = tf.distribute.InputContext(1, 0, strategy.num_replicas_in_sync)
    spec = trainer.create_dataset(context).element_spec
    with strategy.scope():
        # fit's own build step, given specs (it reads only .shape and .dtype) instead of the
        # batch it would take from a distributed dataset (the reduce that fails).
        model._symbolic_build(data_batch=spec)
    if isinstance(strategy, tf.distribute.ParameterServerStrategy):
        for variable in [model.optimizer.iterations, *model.metrics_variables]:
            _add_atomically(variable)


def _add_atomically(variable: Any) -> None:
    """Make a Keras 3 variable's ``assign_add`` / ``assign_sub`` TensorFlow's own (one atomic op
    on the variable's PS task). Keras 3's read the value, then assign the sum: two workers'
    steps running at once under ParameterServerStrategy lose one's update (20 steps counted
    17 in ``optimizer.iterations``, which names checkpoints and is where a resumed job
    starts; metric totals lose batches likewise). The optimizer's weight updates already are
    TensorFlow's own."""
    held = variable.value  # the tf.Variable under the Keras variable

    def assign_add(value: Any) -> Any:
        return held.assign_add(tf.cast(value, held.dtype))

    def assign_sub(value: Any) -> Any:
        return held.assign_sub(tf.cast(value, held.dtype))

    variable.assign_add, variable.assign_sub = assign_add, assign_sub


def run_own_fit(
    trainer: KerasHooks,
    model: Any,
    keras: ModuleType,
    coordinator: Any,
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    workers: int = 1,
) -> None:
    """The epochs ``fit`` would run, from the loop's global step to ``max_steps`` (see the
    module)."""
    strategy = trainer.strategy
    validating = validation_steps(trainer)
    user = user_callbacks(trainer, keras, coordinator is not None)
    epochs = Epochs.of(trainer.settings, loop)
    callbacks = keras.callbacks.CallbackList(
        user, add_history=True, model=model, epochs=epochs.end, steps=epochs.steps, verbose=0
    )
    with step_loss(model):
        train, test = _steps(model, strategy)
        run = _Run(model, loop, keeper, coordinator, workers, callbacks, validating is not None)
        iterator = distributed_iterator(strategy, coordinator, trainer.create_dataset)
        if validating is not None:
            create = trainer.create_validation_dataset
            held = distributed_iterator(strategy, coordinator, create)
        model.stop_training = False
        callbacks.on_train_begin()
        logs: dict[str, float] = {}
        for epoch in range(epochs.start, epochs.end):
            model.reset_metrics()
            callbacks.on_epoch_begin(epoch)
            last = run.epoch(train, iterator, min(epochs.steps, loop.max_steps - loop.global_step))
            logs = _metrics(model)
            if last is not None:
                logs[STEP_LOSS] = last
            if validating is not None:
                model.reset_metrics()
                for _ in finished_steps(test, held, coordinator, validating, workers):
                    pass
                logs.update({f"val_{name}": value for name, value in _metrics(model).items()})
            publish_epoch(loop, keeper, logs)
            callbacks.on_epoch_end(epoch, logs)
            if model.stop_training:
                break
        callbacks.on_train_end(logs)
    stopped(loop, keeper, bool(user))


@dataclass
class _Run:
    """What an epoch's steps report to: the loop and checkpoints, the callbacks."""

    model: Any
    loop: TrainLoop
    keeper: CheckpointKeeper
    coordinator: Any
    workers: int
    callbacks: Any
    validating: bool
    notes: set[str] = field(default_factory=set)

    def epoch(self, train: Any, iterator: Any, todo: int) -> float | None:
        """Up to ``todo`` steps of ``train``, each reported once finished (then the user's
        batch callbacks, not under ParameterServerStrategy); the last one's ``step_loss``.
        Ends early when the loop ends or a callback sets ``model.stop_training``."""
        loop, callbacks, model = self.loop, self.callbacks, self.model
        batch_hooks = self.coordinator is None
        begin = callbacks.on_train_batch_begin if batch_hooks else None
        steps = finished_steps(train, iterator, self.coordinator, todo, self.workers, begin)
        last = None
        for batch, values in enumerate(steps):
            hold = self.validating and last_of_epoch(loop, batch, todo)
            more = report_logs(loop, self.keeper, values, hold, self.notes)
            logs = {name: float(value) for name, value in (values or {}).items()}
            last = logs.get(STEP_LOSS, last)
            if batch_hooks:
                callbacks.on_train_batch_end(batch, logs)
            if not more or model.stop_training:
                model.stop_training = True
                break
        if self.coordinator is not None:
            self.coordinator.join()  # steps scheduled past a stop: their updates, in the metrics
        return last


def _steps(model: Any, strategy: Any) -> tuple[Any, Any]:
    """(train, test): one ``train_step`` / ``test_step`` on every replica, as ``tf.function``s
    of a distributed iterator; train returns the step's logs (see the module)."""

    @tf.function
    def train(iterator: Any) -> Any:
        outputs = strategy.run(model.train_step, args=(next(iterator),))
        logs = dict(model.get_metrics_result())  # cross-replica: over every replica
        if isinstance(outputs, dict) and STEP_LOSS in outputs:
            # The same on every replica (a merge_call's): this worker's first.
            logs[STEP_LOSS] = strategy.experimental_local_results(outputs[STEP_LOSS])[0]
        return logs

    @tf.function
    def test(iterator: Any) -> None:
        strategy.run(model.test_step, args=(next(iterator),))

    return train, test


def _metrics(model: Any) -> dict[str, float]:
    """The compiled metrics' values now, over every replica (read in cross-replica context)."""
    return {name: float(value) for name, value in model.get_metrics_result().items()}


__all__ = ["prepare", "run_own_fit"]
