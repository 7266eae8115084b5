"""TensorFlow 2's hooks: :class:`KerasHooks`, what :class:`taas.KerasTrainer` users override.

The sibling of ``taas.graph.hooks`` (graph mode): the same hook names with TensorFlow 2
meanings. ``main()`` is added by :class:`taas.keras.trainer.KerasTrainer` (so the engine, which
imports this class, is not imported by it). The engine that drives the hooks,
:class:`taas.keras.engine.KerasEngine`, is a separate object, so user methods named like engine
methods change nothing. Importing this module does not import TensorFlow (a test checks it);
the helpers that need it import it when called.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from taas.core.placement import ClusterInfo
from taas.core.settings import TrainerSettings
from taas.keras.exports import ExportRequests, save_model

WarmStartFn = Callable[[Any], None]
"""``fn(model)``: loads warm-start weights into the freshly built model."""


class KerasHooks:
    """The hooks and helpers of :class:`taas.KerasTrainer` (its docstring draws the loop they
    fire in); :class:`taas.keras.engine.KerasEngine` drives an instance of a subclass."""

    settings: TrainerSettings
    cluster: ClusterInfo = ClusterInfo()
    strategy: Any = None
    model: Any = None
    loss: Any = None
    optimizer: Any = None
    global_batch_size: int = 0
    #: Under MultiWorkerMirroredStrategy: the exports asked for, written after ``after_train``.
    _exports: ExportRequests | None = None

    # ----------------------------------------------------------------- hooks (override)

    def build_model(self) -> Any:
        """Build the model; return it compiled, or ``(model, loss, optimizer)``.

        Runs once inside ``self.strategy.scope()`` (variables land where the strategy puts them).
        With the tuple the base class compiles the model with ``loss`` and ``optimizer``.
        """
        raise NotImplementedError(f"{type(self).__name__} must override build_model()")

    def create_dataset(self, input_context: Any) -> Any:
        """Return a repeating ``tf.data.Dataset`` of ``(features, labels)`` batches.

        Called by the strategy once per input pipeline (on each worker under
        ParameterServerStrategy). Shard with ``input_context.input_pipeline_id`` of
        ``input_context.num_input_pipelines`` and batch with
        ``input_context.get_per_replica_batch_size(self.global_batch_size)``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must override create_dataset(input_context) to train"
        )

    def create_validation_dataset(self, input_context: Any) -> Any:
        """Return a ``tf.data.Dataset`` of ``(features, labels)`` batches to validate on at
        each epoch's end (``fit``'s ``validation_data``), or None (the default: no validation).

        Called like ``create_dataset``, once per input pipeline, on each task that runs ``fit``
        (the coordinator's workers under ParameterServerStrategy). A dataset that ends is read
        to its end each time; one that repeats needs ``validation_steps``.
        """
        return None

    def callbacks(self) -> list[Any]:
        """Return your Keras callbacks for ``fit`` (``EarlyStopping``, ``ReduceLROnPlateau``,
        your own), of the Keras your model is built with; default: none.

        Called once after ``build_model`` (and the restore or warm start), on each task that
        runs ``fit`` (every MultiWorkerMirroredStrategy worker): give callbacks that write
        plain files (``CSVLogger``) only when ``self.is_chief`` (``self.task`` names this
        task); ones that save the model (``ModelCheckpoint``) on every worker. They run
        after TaaS's own callback, so they see each step once TaaS has reported, checked and
        checkpointed it; one that sets ``self.model.stop_training`` (as
        ``EarlyStopping`` does) ends training there, with ``after_train`` and the final
        checkpoint as at ``max_steps``. Not called with a custom ``train_batch(batch)``.
        """
        return []

    def get_init_fn(self, checkpoint_path: str) -> WarmStartFn | None:
        """Return ``fn(model)`` warm-starting from ``checkpoint_path``, or None.

        Called after ``build_model`` when ``checkpoint_path`` is set and the model dir holds no
        checkpoint (a restart resumes from the model dir instead), on every task that runs the
        loop, so synchronous replicas start from the same weights.
        """
        return None

    def train_batch(self, batch: Any) -> Any:
        """One custom step on this replica's ``batch``; return the loss (a scalar tensor).

        What Keras calls ``train_step``, the step itself. Not overridden: the base class runs
        ``model.fit``. Overridden, it runs in a ``tf.function`` under ``strategy.run``; the
        returned losses are summed over the replicas, so return
        ``self.average_loss(per_example_loss)`` (scaled by the global batch, which also makes
        the summed gradients right). Its earlier name, ``train(batch)``, still works (with a
        note): graph mode's ``train(session, global_step, is_chief)`` is another
        hook, one step that you run.
        """
        raise NotImplementedError  # never called: the engine runs fit instead

    def after_train(self, model: Any, is_chief: bool) -> None:
        """Called once after the loop: evaluate, ``export_model``. Only the chief should write.

        Under MultiWorkerMirroredStrategy every worker calls it (collective calls such as
        ``model.evaluate`` need them all); under ParameterServerStrategy the coordinator.
        """

    def evaluate(self, model: Any, global_step: int) -> dict[str, float] | None:
        """Evaluator task only: called with each new checkpoint restored into ``model``.

        Return metrics (name -> value) to write as summaries under ``model_dir/eval``.
        """
        return None

    # ----------------------------------------------------------------- where it runs

    @property
    def is_chief(self) -> bool:
        """True on the task that writes: checkpoints, summaries, exports, your files (the
        chief or master, else worker 0; the ParameterServerStrategy coordinator; one process)."""
        return self.cluster.is_chief

    @property
    def task(self) -> tuple[str, int]:
        """This task's ``(type, index)``, e.g. ``("worker", 1)``; one process: ``("worker", 0)``."""
        return self.cluster.task_type, self.cluster.task_index

    # ----------------------------------------------------------------- helpers (call)

    def average_loss(self, per_example_loss: Any) -> Any:
        """``per_example_loss`` summed and divided by the global batch size (custom steps)."""
        import tensorflow as tf

        return tf.nn.compute_average_loss(
            per_example_loss, global_batch_size=self.global_batch_size
        )

    def export_model(self, model: Any, export_dir: str) -> str:
        """Write ``model`` as a SavedModel in ``export_dir``; return the directory (absolute).

        Call it on the chief only or on every task: one SavedModel is written either way. Under
        MultiWorkerMirroredStrategy, where a save needs every worker, it is written when
        ``after_train`` returns, by every worker together (``taas.keras.exports``); elsewhere
        at once (by the chief: another task's call writes to a scratch directory it deletes).
        """
        if self._exports is not None:
            self._exports.add(model, export_dir)
            return os.path.abspath(export_dir)
        is_chief = self.cluster.is_chief if self.cluster.distributed else True
        target = export_dir if is_chief else tempfile.mkdtemp(prefix="taas-export-")
        try:
            save_model(model, target)
        finally:
            if not is_chief:
                shutil.rmtree(target, ignore_errors=True)
        return os.path.abspath(export_dir)


def overrides_hook(trainer: KerasHooks, name: str) -> bool:
    """True when the subclass wrote its own hook ``name``."""
    return getattr(type(trainer), name) is not getattr(KerasHooks, name)


def custom_step(trainer: KerasHooks) -> Callable[[Any], Any] | None:
    """The subclass's own step: ``train_batch``, or ``train``, its earlier name (a
    note says to rename it); None when it wrote neither (the engine runs ``fit``)."""
    if overrides_hook(trainer, "train_batch"):
        return trainer.train_batch
    own = getattr(type(trainer), "train", None)
    if callable(own):
        name = type(trainer).__name__
        print(
            f"note: {name}.train(batch) is now named train_batch(batch) (graph "
            f"mode's train(session, global_step, is_chief) is another hook); it runs as "
            f"before: rename it to train_batch",
            flush=True,
        )
        return getattr(trainer, "train")  # noqa: B009 (the old name, looked up on purpose)
    return None


#: Hooks only ``fit`` calls: overriding them beside ``train_batch(batch)`` is refused.
FIT_ONLY_HOOKS = ("callbacks", "create_validation_dataset")


__all__ = ["FIT_ONLY_HOOKS", "KerasHooks", "WarmStartFn", "custom_step", "overrides_hook"]
