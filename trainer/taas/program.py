"""The program entry that chooses the engine for any trainer class: ``taas.run``.

    run(trainer_cls, argv=None) -> NoReturn     taas.run(MyTrainer), entry.start(MyModel)
    engine_for(trainer_cls) -> EngineFactory    one branch per hook class

The top layer of ``taas``: the only module that knows both ``taas.graph`` and ``taas.keras``
(each hook class's own ``main()`` names its engine directly). The engines, and TensorFlow with
them, are imported when :func:`engine_for` is called, which ``launch`` does after ``--help`` and
the settings checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from taas.core import launch
from taas.core.engine import EngineFactory


def engine_for(trainer_cls: type) -> EngineFactory:
    """The engine for ``trainer_cls`` (a subclass of one of the hook classes).

    One branch per hook class; :class:`TypeError` for anything else.
    """
    from taas.keras.trainer import KerasTrainer, keras_engine

    if isinstance(trainer_cls, type) and issubclass(trainer_cls, KerasTrainer):
        return keras_engine(trainer_cls)
    from taas.graph.trainer import DistributedTrainer, graph_engine

    if isinstance(trainer_cls, type) and issubclass(trainer_cls, DistributedTrainer):
        return graph_engine(trainer_cls)
    raise TypeError(
        f"{getattr(trainer_cls, '__name__', trainer_cls)!r} is not a TaaS trainer class: "
        "subclass taas.DistributedTrainer (graph mode) or taas.KerasTrainer (TensorFlow 2)"
    )


def run(trainer_cls: type, argv: Sequence[str] | None = None) -> NoReturn:
    """Build ``trainer_cls()``, run this task's part, and exit with the code (see
    ``taas.core.exit_codes``); what ``MyTrainer.main()`` does, for any trainer class."""
    launch.run(trainer_cls, argv, engine_for)
