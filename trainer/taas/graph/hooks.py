"""Graph mode's hooks: :class:`GraphHooks`, what :class:`taas.DistributedTrainer` users override.

Only what a user overrides or calls lives here; ``main()`` is added by
:class:`taas.graph.trainer.DistributedTrainer` (so the engine, which imports this class, is
not imported by it). The engine that drives the hooks (:class:`taas.graph.engine.GraphEngine`)
is a separate object holding the trainer, so a user method named like an engine method changes
nothing. The TensorFlow 2 hooks (``taas.keras.hooks``) have the same hook names. Importing
this module (and ``taas.graph.trainer``) does not import TensorFlow, so a program that imports it
in its hooks lets its PS tasks serve without it (``taas.runtime.lean_server``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taas.core.placement import ClusterInfo
from taas.core.publish import log_scalar
from taas.core.settings import TrainerSettings
from taas.graph.exporter import ModelExporter, raw_session
from taas.graph.steps import StepRunner

InitFn = Callable[[Any], None]


class GraphHooks:
    """The hooks and helpers of :class:`taas.DistributedTrainer` (its docstring draws the loop
    they fire in); :class:`taas.graph.engine.GraphEngine` drives an instance of a subclass."""

    settings: TrainerSettings
    cluster: ClusterInfo = ClusterInfo()
    train_op: Any = None
    loss: Any = None
    optimizer: Any = None
    global_step: Any = None
    _model_exporter: ModelExporter | None = None
    # Set by the graph engine once the graph is built: what train_step() runs the train op
    # through (it reads the global step after the update and records each step for the loop).
    _taas_steps: StepRunner | None = None

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

    def create_optimizer(self) -> Any:
        """The optimizer when ``build_model`` returns a loss (or loss_fn) without one.

        Called once, right after ``build_model``, on every task that builds the graph. The
        default is gradient descent at ``settings.learning_rate``.
        """
        import tensorflow as tf  # not at import: a PS task may serve without it (lean_server)

        return tf.compat.v1.train.GradientDescentOptimizer(self.settings.learning_rate)

    def get_init_fn(self, checkpoint_path: str) -> InitFn | None:
        """Return ``fn(session)`` to warm-start from ``checkpoint_path``, or None.

        Called on the chief after ``build_model`` (and ``create_optimizer``) when
        ``checkpoint_path`` is set and the model dir holds no checkpoint (a restart resumes
        from the model dir instead); ``fn`` runs once, right after the variables are
        initialised, before the first ``train``.
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

    def evaluate(self, session: Any, global_step: int) -> None:
        """Evaluator task only: called with each new checkpoint restored into ``session``."""

    # ----------------------------------------------------------------- helpers (call)

    def train_step(
        self, session: Any, feed_dict: dict[Any, Any] | None = None, examples: int | None = None
    ) -> float:
        """Run the base-built train op once; return the loss (also shown in progress lines).

        ``examples``: how many examples this step used, when not ``batch_size`` (progress).
        """
        if self.train_op is None or self.loss is None:
            raise NotImplementedError(
                f"{type(self).__name__}: train_step() runs the train op the base class builds; "
                "return the loss from build_model() (or run your own train op in train())"
            )
        if self._taas_steps is None:
            raise RuntimeError(
                f"{type(self).__name__}.train_step() runs under the engine: call it from "
                "train() and start the trainer with main()"
            )
        return self._taas_steps.run(session, self.train_op, self.loss, feed_dict, examples)

    def read_global_step(self, session: Any) -> int:
        """The global step now, read past the session's hooks.

        ``session`` in ``train`` is a ``MonitoredSession``: each ``session.run`` also runs the
        chief's summary and checkpoint hooks, whose summaries may need your placeholders fed
        (``session.run(global_step)`` alone then fails with "You must feed a value for
        placeholder"). This reads the variable with the plain session under it.
        """
        return int(raw_session(session).run(self.global_step))

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Publish a scalar (accuracy, learning rate, ...) with the chief's progress: its last
        five values show in the TFJob's ``status.progress.scalars`` (``taas.log_scalar``)."""
        log_scalar(name, value, step)

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


__all__ = ["GraphHooks", "InitFn"]
