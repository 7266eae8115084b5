"""The TensorFlow 2 hook class users subclass: :class:`KerasTrainer` (hooks, helpers, ``main``).

The sibling of :class:`taas.base.DistributedTrainer` (graph mode): the same hook names with
TensorFlow 2 meanings, driven by :class:`taas.keras_engine.KerasEngine` (chosen by
:func:`taas.engine.engine_for`), a separate object, so user methods named like engine methods
change nothing. Importing this module does not import TensorFlow.

``fit`` needs ``tf_keras`` (Keras 2) under MultiWorkerMirroredStrategy and
ParameterServerStrategy (Keras 3's ``fit`` fails there, keras-team/keras#20585): build models
with ``import tf_keras as keras``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from taas.cluster import ClusterInfo
from taas.settings import TrainerSettings

WarmStartFn = Callable[[Any], None]
"""``fn(model)``: loads warm-start weights into the freshly built model."""


class KerasTrainer:
    """Subclass, fill in the hooks you need, run with ``MyTrainer.main()``.

    The loop the hooks fire in, on every task that runs Python training code (one process;
    every MultiWorkerMirroredStrategy worker; the ParameterServerStrategy coordinator, while
    PS and worker tasks only serve)::

        build    with strategy.scope():
                     result = build_model()            compiled model | (model, loss, optimizer)
                 restore the latest checkpoint in model_dir, else (with checkpoint_path):
                     init = get_init_fn(checkpoint_path); init(model)        warm start
        data     create_dataset(input_context)         per input pipeline, called by the strategy
        loop     train() not overridden: model.fit over the remaining steps
                 train(batch) overridden: one custom step per call, run by strategy.run in a
                     tf.function (scheduled on a worker under ParameterServerStrategy)
                 progress line every N steps/secs; chief: checkpoints, summaries
                 loss NaN/infinite: exit 3; SIGTERM: checkpoint, exit 143 (resumes there)
                 (already at max_steps: one line "nothing to train", no steps)
        end      after_train(model, is_chief)           evaluate, export_model(model, dir)
                 chief: final checkpoint; under ParameterServerStrategy every PS and worker
                 told "done" (they exit 0)

    An ``evaluator`` task builds the model alone (default strategy) and calls
    ``evaluate(model, global_step)`` on every new checkpoint in ``model_dir``; the metrics it
    returns are written as summaries under ``model_dir/eval``.

    Inside the hooks ``self.settings``, ``self.cluster``, ``self.strategy`` and
    ``self.global_batch_size`` (``batch_size`` times the replicas stepping together) are set;
    after ``build_model`` so are ``self.model``, ``self.loss`` and ``self.optimizer``.
    """

    settings: TrainerSettings
    cluster: ClusterInfo = ClusterInfo()
    strategy: Any = None
    model: Any = None
    loss: Any = None
    optimizer: Any = None
    global_batch_size: int = 0

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

    def get_init_fn(self, checkpoint_path: str) -> WarmStartFn | None:
        """Return ``fn(model)`` warm-starting from ``checkpoint_path``, or None.

        Called after ``build_model`` when ``checkpoint_path`` is set and the model dir holds no
        checkpoint (a restart resumes from the model dir instead), on every task that runs the
        loop, so synchronous replicas start from the same weights.
        """
        return None

    def train(self, batch: Any) -> Any:
        """One custom step on this replica's ``batch``; return the loss (a scalar tensor).

        Not overridden: the base class runs ``model.fit``. Overridden, it runs in a
        ``tf.function`` under ``strategy.run``; the returned losses are summed over the
        replicas, so return ``self.average_loss(per_example_loss)`` (scaled by the global
        batch, which also makes the summed gradients right).
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

    # ----------------------------------------------------------------- helpers (call)

    def average_loss(self, per_example_loss: Any) -> Any:
        """``per_example_loss`` summed and divided by the global batch size (custom steps)."""
        import tensorflow as tf

        return tf.nn.compute_average_loss(
            per_example_loss, global_batch_size=self.global_batch_size
        )

    def export_model(self, model: Any, export_dir: str) -> str:
        """Write ``model`` as a SavedModel in ``export_dir`` (chief only); return the directory.

        Other MultiWorkerMirroredStrategy workers save to a scratch directory they delete, as
        saving may need every replica.
        """
        is_chief = self.cluster.is_chief if self.cluster.distributed else True
        target = export_dir if is_chief else tempfile.mkdtemp(prefix="taas-export-")
        try:
            if hasattr(model, "save"):
                model.save(target)
            else:
                import tensorflow as tf

                tf.saved_model.save(model, target)
        finally:
            if not is_chief:
                shutil.rmtree(target, ignore_errors=True)
        return os.path.abspath(export_dir)

    @classmethod
    def main(cls, argv: list[str] | None = None) -> None:
        """Run this trainer as a program (reads settings and cluster, exits with the code)."""
        from taas.program import run

        run(cls, argv)


def overrides_train(trainer: KerasTrainer) -> bool:
    """True when the subclass wrote its own ``train`` step (else the engine runs ``fit``)."""
    return type(trainer).train is not KerasTrainer.train


__all__ = ["KerasTrainer", "WarmStartFn", "overrides_train"]
