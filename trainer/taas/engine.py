"""The seam between a hook class and the engine that drives it.

A *hook class* is what users subclass (:class:`taas.base.DistributedTrainer`): the hooks
``build_model``, ``get_init_fn``, ``train``, ``after_train``, ``create_optimizer``,
``evaluate`` and the helpers they call. An *engine* plays one task's part around those hooks:
serve variables, evaluate, or build, initialise, loop and end. The two are separate objects:
the engine holds the trainer and calls its hooks; the trainer never inherits engine code, so a
user method named ``run``, ``_build_graph`` or ``_train`` cannot replace it.

    Engine                       protocol: run() plays this task's part, raises to fail
    EngineFactory                (trainer, settings, cluster) -> Engine
    engine_for(trainer_cls)      the runner's choice of engine for a hook class
    StepResult                   what one train() call did, for the loop (engine-neutral)

Engines today:

- :class:`taas.graph_engine.GraphEngine` (graph mode, ``tf.compat.v1``, between-graph
  replication with PS tasks) for :class:`~taas.base.DistributedTrainer`;
- :class:`taas.keras_engine.KerasEngine` (TensorFlow 2, a ``tf.distribute`` strategy chosen from
  the cluster by ``taas.strategies``) for :class:`~taas.keras_base.KerasTrainer`.

Both share :mod:`taas.program` (settings, cluster, flags, exit codes), :mod:`taas.preflight`
(the model dir check), :mod:`taas.loop` (progress lines, early stop, the non-finite loss check)
and :class:`StepResult`. Another engine plugs in the same way: a hook class, an engine class
satisfying :class:`Engine`, one branch in :func:`engine_for`.

This module does not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from taas.cluster import ClusterInfo
from taas.settings import TrainerSettings


class Engine(Protocol):
    """Drives one task of a training job around a trainer's hooks."""

    def run(self) -> None:
        """Play this task's part (serve, evaluate or train) to its end; raise to fail.

        Exceptions map to exit codes in :func:`taas.exit_codes.classify`.
        """
        ...


EngineFactory = Callable[[Any, TrainerSettings, ClusterInfo], Engine]
"""Builds the engine for ``(trainer, settings, cluster)``."""


@dataclass(frozen=True)
class StepResult:
    """What one call of the ``train`` hook did, as far as the engine could see.

    ``global_step`` is None when the step ran outside the base class's step helper (old style:
    the user's own ``session.run``); the engine then reads the global step itself. ``loss`` is
    None when the engine did not see it (no progress loss, no non-finite check).
    """

    global_step: int | None = None
    loss: float | None = None
    examples: int | None = None


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


def engine_for(trainer_cls: type) -> EngineFactory:
    """The engine for ``trainer_cls`` (a subclass of one of the hook classes).

    One branch per hook class.
    """
    from taas.keras_base import KerasTrainer

    if isinstance(trainer_cls, type) and issubclass(trainer_cls, KerasTrainer):
        from taas.keras_engine import KerasEngine

        return KerasEngine
    from taas.base import DistributedTrainer

    if isinstance(trainer_cls, type) and issubclass(trainer_cls, DistributedTrainer):
        from taas.graph_engine import GraphEngine

        return GraphEngine
    raise TypeError(
        f"{getattr(trainer_cls, '__name__', trainer_cls)!r} is not a TaaS trainer class: "
        "subclass taas.DistributedTrainer (graph mode) or taas.KerasTrainer (TensorFlow 2)"
    )
