"""The seam between a hook class and the engine that drives it.

A *hook class* is what users subclass (:class:`taas.DistributedTrainer`,
:class:`taas.KerasTrainer`): the hooks ``build_model``, ``get_init_fn``, ``train``,
``after_train``, ``create_optimizer``, ``evaluate`` and the helpers they call. An *engine* plays
one task's part around those hooks: serve variables, evaluate, or build, initialise, loop and
end. The two are separate objects: the engine holds the trainer and calls its hooks; the trainer
never inherits engine code, so a user method named ``run``, ``_build_graph`` or ``_train``
cannot replace it.

    Engine                       protocol: run() plays this task's part, raises to fail
    EngineFactory                (trainer, settings, cluster) -> Engine
    EngineChoice                 trainer class -> EngineFactory (what ``main()`` hands the runner)
    StepResult, StepLog          what one train() call did, for the loop (engine-neutral)

Engines today:

- :class:`taas.graph.engine.GraphEngine` (graph mode, ``tf.compat.v1``, between-graph
  replication with PS tasks) for :class:`~taas.graph.trainer.DistributedTrainer`;
- :class:`taas.keras.engine.KerasEngine` (TensorFlow 2, a ``tf.distribute`` strategy chosen from
  the cluster by ``taas.keras.strategies``) for :class:`~taas.keras.trainer.KerasTrainer`.

Both share :mod:`taas.core.launch` (settings, cluster, flags, exit codes), :mod:`taas.core.loop`
(progress lines, early stop, the non-finite loss check), :mod:`taas.core.checkpoint_wait` (the
evaluator's wait for new checkpoints), :mod:`taas.runtime` (the model dir check, PS
coordination) and :class:`StepResult`. Another engine plugs in the same way: a subpackage with a
hook class whose ``main()`` names its engine, and one branch in :func:`taas.program.engine_for`.

This module does not import TensorFlow (no module of ``taas.core`` does: import-linter checks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from taas.core.placement import ClusterInfo
from taas.core.settings import TrainerSettings


class Engine(Protocol):
    """Drives one task of a training job around a trainer's hooks."""

    def run(self) -> None:
        """Play this task's part (serve, evaluate or train) to its end; raise to fail.

        Exceptions map to exit codes in :func:`taas.core.exit_codes.classify`.
        """
        ...


EngineFactory = Callable[[Any, TrainerSettings, ClusterInfo], Engine]
"""Builds the engine for ``(trainer, settings, cluster)``."""

EngineChoice = Callable[[type], EngineFactory]
"""The engine for a trainer class; called by the runner once the settings are read (so an
engine's TensorFlow import comes after ``--help`` and the settings checks)."""


@dataclass(frozen=True)
class StepResult:
    """What one call of the ``train`` hook did, as far as the engine could see.

    ``global_step`` is None when the step ran outside the base class's step helper (old style:
    the user's own ``session.run``); the engine then reads the global step itself. ``loss`` is
    None when the engine did not see it (no progress loss, no non-finite check). ``metrics``:
    the step's other values by name (Keras fit's compiled metrics), shown and published with
    the loss.
    """

    global_step: int | None = None
    loss: float | None = None
    examples: int | None = None
    metrics: Mapping[str, float] | None = None


class StepLog:
    """Holds the :class:`StepResult` the step helper recorded during one ``train`` call.

    The engine clears it before calling ``train`` and takes the result after; the step helper
    (``train_step``) records into it. An explicit object, not attributes on the trainer.
    """

    def __init__(self) -> None:
        self._result: StepResult | None = None

    def record(self, result: StepResult) -> None:
        """Keep ``result`` (a later record in the same ``train`` call replaces it)."""
        self._result = result

    def take(self) -> StepResult | None:
        """The recorded result (None when nothing was recorded), and clear it."""
        result, self._result = self._result, None
        return result
