"""The TensorFlow 2 hook class users subclass: :class:`KerasTrainer` = hooks + ``main()``.

    class MyTrainer(taas.KerasTrainer): ...     MyTrainer.main()

The hooks live in :class:`taas.keras.hooks.KerasHooks`; this class adds ``main()``, which hands
the class to :func:`taas.core.launch.run` with :class:`taas.keras.engine.KerasEngine` as its
engine, imported (with TensorFlow) only when the runner asks, after the settings are read.
Importing this module does not import TensorFlow (a test checks it).

``fit`` takes ``tf_keras`` (Keras 2) models under every strategy and Keras 3 models in one
process and under MirroredStrategy; Keras 3's ``fit`` fails under MultiWorkerMirroredStrategy
and ParameterServerStrategy (keras-team/keras#20585), where TaaS's own loop trains a Keras 3
model with the same callbacks and reports (``taas.keras.own_fit``).
"""

from __future__ import annotations

from typing import Any

from taas.core.checkpoint_wait import AfterFirstCheckpoint, evaluator_waits_first
from taas.core.engine import Engine, EngineFactory
from taas.core.launch import run
from taas.core.placement import ClusterInfo
from taas.core.settings import SettingsError, TrainerSettings
from taas.keras.hooks import KerasHooks, WarmStartFn
from taas.keras.strategies import plan_strategy
from taas.runtime.coordination import task_id
from taas.runtime.lean_server import LeanServer, lean_available
from taas.runtime.preflight import EVALUATOR_WRITES, require_writable_model_dir


class KerasTrainer(KerasHooks):
    """Subclass, fill in the hooks you need, run with ``MyTrainer.main()``.

    The loop the hooks fire in, on every task that runs Python training code (one process;
    every MultiWorkerMirroredStrategy worker; the ParameterServerStrategy coordinator, while
    PS and worker tasks only serve)::

        build    with strategy.scope():
                     result = build_model()            compiled model | (model, loss, optimizer)
                 restore the latest checkpoint in model_dir, else (with checkpoint_path):
                     init = get_init_fn(checkpoint_path); init(model)        warm start
        data     create_dataset(input_context)         per input pipeline, called by the strategy
        loop     train_batch() not overridden: model.fit over the remaining steps (a Keras 3
                     model under MultiWorkerMirroredStrategy or ParameterServerStrategy:
                     TaaS's own epochs of its train_step, as fit would run them), with
                     callbacks = [TaaS's] + callbacks()    the user's run after TaaS's
                     validation: create_validation_dataset(input_context), validation_steps
                     batches at each epoch's end (epochs of steps_per_epoch; else one epoch)
                     a callback's model.stop_training (EarlyStopping) ends the loop early
                 train_batch(batch) overridden: one custom step per call, run by strategy.run in a
                     tf.function (scheduled on a worker under ParameterServerStrategy)
                 progress line every N steps/secs (the step's loss, fit's metrics);
                 chief: checkpoints, summaries
                 loss NaN/infinite: exit 3; SIGTERM: checkpoint, exit 143 (resumes there)
                 (already at max_steps: one line "nothing to train", no steps)
        end      after_train(model, is_chief)           evaluate, export_model(model, dir)
                 MultiWorkerMirroredStrategy: the exports asked for, by every worker together
                 chief: final checkpoint; under ParameterServerStrategy every PS and worker
                 told "done" (they exit 0)

    An ``evaluator`` task builds the model alone (default strategy) and calls
    ``evaluate(model, global_step)`` on every new checkpoint in ``model_dir``; the metrics it
    returns are written as summaries under ``model_dir/eval``.

    Inside the hooks ``self.settings``, ``self.cluster``, ``self.is_chief`` (the task that
    writes), ``self.task`` (``(type, index)``), ``self.strategy`` and ``self.global_batch_size``
    (``batch_size`` times the replicas stepping together) are set;
    after ``build_model`` so are ``self.model``, ``self.loss`` and ``self.optimizer``.
    """

    @classmethod
    def main(cls, argv: list[str] | None = None) -> None:
        """Run this trainer as a program (reads settings and cluster, exits with the code)."""
        run(cls, argv, keras_engine)


def keras_engine(trainer_cls: type) -> EngineFactory:
    """The engine of every :class:`KerasTrainer` subclass: :class:`KerasEngine`; a PS or worker
    task of a ParameterServerStrategy job whose program has not imported TensorFlow serves
    without its Python API (:func:`lean_serving`), and its evaluator imports it only once the
    first checkpoint is there (``taas.core.checkpoint_wait.AfterFirstCheckpoint``)."""

    def make(trainer: Any, settings: TrainerSettings, cluster: ClusterInfo) -> Engine:
        lean = lean_serving(settings, cluster)
        if lean is not None:
            return lean

        def engine() -> Engine:
            from taas.keras.engine import KerasEngine

            return KerasEngine(trainer, settings, cluster)

        if evaluator_waits_first(settings, cluster.task_type):
            return AfterFirstCheckpoint(
                engine, settings, cluster.task_name, lambda: evaluator_preflight(settings)
            )
        return engine()

    return make


def evaluator_preflight(settings: TrainerSettings) -> None:
    """An evaluator writes its metrics' summaries to model_dir/eval."""
    require_writable_model_dir(settings, "eval", EVALUATOR_WRITES)


def lean_serving(settings: TrainerSettings, cluster: ClusterInfo) -> LeanServer | None:
    """The lean server of a ParameterServerStrategy PS or worker task, when TensorFlow's Python
    API is not imported yet; None for every other task (and for settings the engine refuses:
    it says why)."""
    if not lean_available():
        return None
    try:
        plan = plan_strategy(settings, cluster, gpus=0)
    except SettingsError:
        return None
    if plan.role != "serve":
        return None
    return LeanServer(
        cluster.task_name,
        plan.task_type,
        plan.task_index,
        plan.cluster_spec,
        {
            "inter_op_parallelism_threads": plan.inter_op_threads,
            "gpu_options.allow_growth": settings.gpu_memory_growth,
        },
        {task_id("chief", 0)},
        "coordinator",
        serves=plan.hosts("chief"),
    )


__all__ = ["KerasTrainer", "WarmStartFn", "keras_engine"]
