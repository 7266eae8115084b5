"""TensorFlow 2: Keras ``fit`` as the loop, for tf_keras models everywhere and Keras 3 models
where Keras 3's ``fit`` works; what TaaS's own loop for Keras 3 shares with it.

    keras = fit_keras(trainer, model, plan)     tf_keras or keras; refuses what cannot run
    own_loop(keras, plan)                       True: taas.keras.own_fit runs the epochs
    run_fit(trainer, model, keras, coordinator, loop, keeper, workers)

``fit`` gets TaaS's callback first, then the user's ``callbacks()``. TaaS's reports each
finished batch to the shared :class:`~taas.core.loop.TrainLoop` (progress lines, the NaN check,
the stop at ``max_steps``), then to the :class:`~taas.keras.checkpoints.CheckpointKeeper`
(summaries, checkpoints, SIGTERM); at each epoch's end it publishes the validation metrics,
and the progress line of the epoch's last step, held until then, carries them. So
the user's callbacks see a step only once it is checked and checkpointed, and one that stops
``fit`` (``EarlyStopping``) leaves the engine to finish as at ``max_steps``: ``after_train``,
the final checkpoint.

The loss reported is the step's own, as in graph mode and the custom step: ``logs["loss"]`` in
a callback is Keras's running mean since the epoch began (1.66 while the model already fits
to 0.0025), so while ``fit`` runs (:func:`step_loss`) each train step's logs also carry
``step_loss``: the loss that step minimised (``compute_loss``'s, summed over the replicas: the
mean over the global batch). A model whose own ``train_step`` does not call ``compute_loss``
has none: then the progress shows Keras's running mean, and says so once. The compiled metrics
are shown as Keras computes them: means since the epoch began.

Every value in the logs is the one plain Keras reports in one process on the same global
batches: ``fit`` runs with ``distribute_reduction_method="first"`` (unless the user set one),
as each replica's values are already global (Keras's metrics aggregate their state over the
replicas in a ``merge_call``, ``step_loss`` likewise); tf_keras's default sums them over a
MultiWorkerMirroredStrategy job's workers (twice the loss with two). The epoch's logs are
Keras's own (the metrics' values over the epoch), ``step_loss`` beside them.

Epochs: without ``steps_per_epoch`` one epoch of the remaining steps; with it, epochs of that
many steps, epoch ``global step // steps_per_epoch`` first (a run resumed mid-epoch runs whole
epochs from where it resumed), the last one cut at ``max_steps``.

Keras 3 (``import keras``): its ``fit`` runs under the default strategy and MirroredStrategy;
under MultiWorkerMirroredStrategy and ParameterServerStrategy it fails on TensorFlow 2.21
(keras-team/keras#20585), so there TaaS's own loop (``taas.keras.own_fit``) runs the model's
``train_step`` with the same callbacks, logs and reports (:func:`report_logs`,
:func:`publish_epoch`, :class:`Epochs`, :func:`step_loss`).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import tensorflow as tf

from taas.core.loop import TrainLoop
from taas.core.settings import SettingsError
from taas.keras.checkpoints import CheckpointKeeper
from taas.keras.hooks import KerasHooks, overrides_hook
from taas.keras.steps import fetch, report, window
from taas.keras.strategies import StrategyPlan

KERAS3_FIT_ISSUE = "keras-team/keras#20585"
#: The logs' entry with each train step's own loss (Keras's ``loss`` is a running mean).
STEP_LOSS = "step_loss"
#: Keras's methods that make an epoch's logs from its metrics (tf_keras's; Keras 3's).
EPOCH_LOGS = ("_validate_and_get_metrics_result", "_get_metrics_result_or_logs")
#: Strategies whose fit Keras 3 cannot run on TensorFlow 2.21 (their names as users know them).
KERAS3_NO_FIT = {
    "multi_worker_mirrored": "MultiWorkerMirroredStrategy",
    "parameter_server": "ParameterServerStrategy",
}


def fit_keras(trainer: KerasHooks, model: Any, plan: StrategyPlan) -> ModuleType:
    """The Keras ``model`` belongs to (``tf_keras`` or Keras 3's ``keras``); else
    :class:`SettingsError` naming the fix."""
    import tf_keras

    name = f"{type(trainer).__name__}.build_model()"
    what = f"{type(model).__module__}.{type(model).__name__}"
    if isinstance(model, tf_keras.Model):
        _one_step_per_call(name, model)
        return tf_keras
    keras = _keras3()
    if keras is None or not isinstance(model, keras.Model):
        raise SettingsError(
            f"{name} returned a {what}, not a Keras model: return a compiled tf_keras "
            "(`import tf_keras as keras`) or Keras 3 model, or (model, loss, optimizer)"
        )
    _one_step_per_call(name, model)
    return keras


def own_loop(keras: ModuleType, plan: StrategyPlan) -> bool:
    """True when TaaS's own loop (``taas.keras.own_fit``) trains the model, as Keras 3's ``fit``
    cannot under ``plan``'s strategy (see the module)."""
    return keras.__name__ != "tf_keras" and plan.kind in KERAS3_NO_FIT


def _one_step_per_call(name: str, model: Any) -> None:
    """Refuse ``compile(steps_per_execution=N > 1)``: Keras then calls the callbacks once per N
    steps, and TaaS counts, checks and checkpoints each step."""
    value = getattr(model, "steps_per_execution", 1)
    auto = isinstance(value, str) or getattr(model, "_autotune_steps_per_execution", False)
    steps = 1 if auto or value is None else int(value.numpy() if hasattr(value, "numpy") else value)
    if steps > 1 or auto:
        raise SettingsError(
            f"{name} compiled the model with steps_per_execution="
            f"{'auto' if steps <= 1 else steps}: Keras then reports only every Nth step, and "
            "TaaS counts, checks and checkpoints each one; compile without steps_per_execution"
        )


def _keras3() -> ModuleType | None:
    try:
        import keras
    except ImportError:
        return None
    return keras if keras.__version__.split(".")[0] >= "3" else None


@contextmanager
def step_loss(model: Any) -> Iterator[None]:
    """While in the block, each train step's logs carry ``STEP_LOSS`` and every value in them is
    the global one, once (see the module): the model's ``train_step`` and ``compute_loss`` (and
    the method that builds the epoch's logs) are wrapped on the instance, then unwrapped."""
    train_step, compute_loss = model.train_step, model.compute_loss
    epoch_logs_name = next((name for name in EPOCH_LOGS if hasattr(model, name)), None)
    chosen = getattr(model, "_distribute_reduction_method", None)  # set by the user: theirs
    # MirroredStrategy traces each replica's step in a thread of its own: each keeps its own.
    replica = threading.local()

    def recording_loss(*args: Any, **kwargs: Any) -> Any:
        loss = compute_loss(*args, **kwargs)
        if getattr(replica, "losses", None) is not None:  # in a train step (not a test step)
            replica.losses.append(loss)
        return loss

    def step_with_loss(data: Any) -> Any:
        replica.losses = []
        try:
            logs = train_step(data)
            losses = replica.losses
        finally:
            replica.losses = None
        if len(losses) != 1 or not isinstance(logs, dict):
            return logs  # the model's own train_step: no single loss to show
        loss = losses[0]  # scaled by 1 / replicas, for the optimizer: the sum is the mean
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            # In a merge_call, as Keras's metrics compute their results: one tensor, the same
            # on every replica (an all_reduce's copy on a replica whose output is unused may be
            # pruned from the graph, leaving the others' collective waiting).
            loss = context.merge_call(_sum_over_replicas, args=(loss,))
        return {**logs, STEP_LOSS: loss}

    wrapped = {"train_step": step_with_loss, "compute_loss": recording_loss}
    if epoch_logs_name is not None:
        wrapped[epoch_logs_name] = _without_step_loss(getattr(model, epoch_logs_name))
    for name, method in wrapped.items():
        setattr(model, name, method)
    if chosen is None and hasattr(model, "distribute_reduction_method"):
        model.distribute_reduction_method = "first"
    try:
        yield
    finally:
        for name in wrapped:
            delattr(model, name)  # the class's methods again
        if chosen is None and hasattr(model, "distribute_reduction_method"):
            model.distribute_reduction_method = None


def _sum_over_replicas(strategy: Any, value: Any) -> Any:
    return strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)


def _without_step_loss(epoch_logs: Any) -> Any:
    """Keras's method making an epoch's logs, which takes the model's metrics (over the epoch,
    from their variables) only when the logs hold the metrics' names and no other: it sees the
    logs without ``STEP_LOSS``, which is then put back (the last step's)."""

    def wrapped(logs: Any) -> Any:
        if not isinstance(logs, dict) or STEP_LOSS not in logs:
            return epoch_logs(logs)
        rest = {name: value for name, value in logs.items() if name != STEP_LOSS}
        result = epoch_logs(rest)
        return {**result, STEP_LOSS: logs[STEP_LOSS]} if isinstance(result, dict) else result

    return wrapped


def user_callbacks(trainer: KerasHooks, keras: ModuleType, coordinated: bool) -> list[Any]:
    """``trainer.callbacks()``, each checked to be a callback of the model's Keras and, under
    ParameterServerStrategy (``coordinated``), one Keras runs there: epoch-level hooks only
    (a batch's logs are not known on the coordinator when the batch is scheduled)."""
    name = f"{type(trainer).__name__}.callbacks()"
    callbacks = list(trainer.callbacks() or [])
    for callback in callbacks:
        if not isinstance(callback, keras.callbacks.Callback):
            raise SettingsError(
                f"{name} returned {callback!r}, not a {keras.__name__}.callbacks.Callback: "
                f"build callbacks with the Keras the model is built with "
                f"(`import {keras.__name__} as keras`)"
            )
        if coordinated and _batch_level(callback):
            raise SettingsError(
                f"{name} returned {type(callback).__name__}, which has batch-level hooks "
                "(on_train_batch_end and the like): under ParameterServerStrategy Keras runs "
                "only epoch-level callbacks (EarlyStopping, ReduceLROnPlateau, on_epoch_end); "
                "move its work to on_epoch_end, or train with MultiWorkerMirroredStrategy "
                "(no PS replicas)"
            )
    return callbacks


def _batch_level(callback: Any) -> bool:
    """True when Keras would refuse ``callback`` under ParameterServerStrategy."""
    if getattr(callback, "_supports_tf_logs", False):
        return False
    return any(
        getattr(callback, f"_implements_{mode}_batch_hooks", lambda: False)()
        for mode in ("train", "test", "predict")
    )


def run_fit(
    trainer: KerasHooks,
    model: Any,
    keras: ModuleType,
    coordinator: Any,
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    workers: int = 1,
) -> None:
    """``model.fit`` from the loop's global step to ``max_steps`` (see the module)."""
    validating = validation_steps(trainer) is not None
    callbacks = [loop_callback(keras, loop, keeper, window(coordinator, workers), validating)]
    callbacks += user_callbacks(trainer, keras, coordinator is not None)
    epochs = Epochs.of(trainer.settings, loop)
    fit_args: dict[str, Any] = {
        "epochs": epochs.end,
        "initial_epoch": epochs.start,
        "steps_per_epoch": epochs.steps,
    }
    if validating:
        fit_args["validation_data"] = _data(keras, trainer, trainer.create_validation_dataset)
        fit_args["validation_steps"] = trainer.settings.validation_steps
    with step_loss(model):
        model.fit(
            _data(keras, trainer, trainer.create_dataset),
            verbose=0,
            shuffle=False,  # the datasets shuffle themselves (Keras 3 warns otherwise)
            callbacks=callbacks,
            **fit_args,
        )
    stopped(loop, keeper, len(callbacks) > 1)


@dataclass(frozen=True)
class Epochs:
    """The epochs from the loop's global step to ``max_steps``: ``range(start, end)``, of
    ``steps`` steps each (the last one cut at ``max_steps``; see the module)."""

    start: int
    end: int
    steps: int

    @classmethod
    def of(cls, settings: Any, loop: TrainLoop) -> Epochs:
        if not settings.steps_per_epoch:
            return cls(0, 1, loop.max_steps - loop.global_step)
        steps = settings.steps_per_epoch
        return cls(loop.global_step // steps, math.ceil(loop.max_steps / steps), steps)


def validation_steps(trainer: KerasHooks) -> int | None:
    """The batches each validation reads, when the trainer validates (None: it does not)."""
    if not overrides_hook(trainer, "create_validation_dataset"):
        return None
    steps = trainer.settings.validation_steps
    if steps is None:
        raise SettingsError(
            f"{type(trainer).__name__} overrides create_validation_dataset: set "
            "validation_steps (TAAS_VALIDATION_STEPS or --validation_steps), the batches "
            "each validation reads from it"
        )
    return int(steps)


def stopped(loop: TrainLoop, keeper: CheckpointKeeper, callbacks_ran: bool) -> None:
    """After the epochs: the user's callbacks (``callbacks_ran``) may have changed the model
    since the last checkpoint, or stopped training before ``max_steps``."""
    keeper.changed_since_save(callbacks_ran)
    if loop.running:
        print(
            f"[{loop.task}] fit stopped at global step {loop.global_step} before max_steps "
            f"{loop.max_steps} (a callback set model.stop_training)",
            flush=True,
        )


def _data(keras: ModuleType, trainer: KerasHooks, create: Any) -> Any:
    """What ``fit`` reads: tf_keras's DatasetCreator (every strategy), else the strategy's
    distributed dataset (Keras 3 takes it in one process and under MirroredStrategy)."""
    if keras.__name__ == "tf_keras":
        return keras.utils.experimental.DatasetCreator(create)
    return trainer.strategy.distribute_datasets_from_function(create)


def loop_callback(
    keras: ModuleType,
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    limit: int,
    validating: bool = False,
) -> Any:
    """TaaS's callback (of ``keras``'s Callback class): reports each finished batch, in
    order, at most ``limit`` behind under ParameterServerStrategy; stops fit when the loop
    ends; publishes the validation metrics at each epoch's end. With validation
    (``validating``) the progress line of an epoch's last step waits for them: printed at the
    epoch's end, it carries that epoch's ``val_*``."""

    class LoopCallback(keras.callbacks.Callback):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self._supports_tf_logs = True  # PS training hands RemoteValues: fetched in order
            self.pending: deque[tuple[int, Any]] = deque()
            self.notes: set[str] = set()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.pending.append((batch, logs))
            while len(self.pending) > limit:
                self._report_one()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            while self.pending:
                self._report_one()
            publish_epoch(loop, keeper, fetch(logs))

        def _report_one(self) -> None:
            batch, values = self.pending.popleft()
            steps = (self.params or {}).get("steps")
            hold = validating and last_of_epoch(loop, batch, steps)
            if not report_logs(loop, keeper, fetch(values), hold, self.notes):
                self.model.stop_training = True

    return LoopCallback()


def last_of_epoch(loop: TrainLoop, batch: int, steps: int | None) -> bool:
    """True when the loop's next step, ``batch`` of ``steps``, ends the epoch or training."""
    return loop.global_step + 1 >= loop.max_steps or (steps is not None and batch + 1 >= steps)


def report_logs(
    loop: TrainLoop, keeper: CheckpointKeeper, logs: Any, hold: bool, notes: set[str]
) -> bool:
    """One finished step from its logs (Keras's values, ``STEP_LOSS`` among them: the loss
    shown); False when the loop should end. Without ``STEP_LOSS`` the loss shown is Keras's
    running mean, which a note says once (``notes``: the notes already printed)."""
    values = {name: float(value) for name, value in (logs or {}).items()}
    loss = values.pop(STEP_LOSS, None)
    running = values.pop("loss", None)
    if loss is None and running is not None and "running" not in notes:
        notes.add("running")
        print(
            f"[{loop.task}] note: the model's train_step does not call compute_loss: "
            "the progress loss is Keras's running mean since the epoch began",
            flush=True,
        )
    return report(loop, keeper, running if loss is None else loss, values, hold)


def publish_epoch(loop: TrainLoop, keeper: CheckpointKeeper, logs: Any) -> None:
    """An epoch's end: its validation metrics (``val_*`` in ``logs``) to the progress (the
    held line of its last step) and the chief's summaries."""
    validation = {
        name: float(value) for name, value in (logs or {}).items() if name.startswith("val_")
    }
    loop.epoch_end(validation)
    if validation:
        keeper.epoch_end(loop.global_step, validation)


__all__ = [
    "KERAS3_FIT_ISSUE",
    "STEP_LOSS",
    "Epochs",
    "fit_keras",
    "own_loop",
    "publish_epoch",
    "report_logs",
    "run_fit",
    "step_loss",
    "stopped",
    "user_callbacks",
    "validation_steps",
]
