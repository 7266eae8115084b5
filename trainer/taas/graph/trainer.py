"""The graph-mode hook class users subclass: :class:`DistributedTrainer` = hooks + ``main()``.

    class MyTrainer(taas.DistributedTrainer): ...     MyTrainer.main()

The hooks live in :class:`taas.graph.hooks.GraphHooks`; this class adds ``main()``, which hands
the class to :func:`taas.core.launch.run` with :class:`taas.graph.engine.GraphEngine` as its
engine (imported when the runner asks, after the settings are read). ``CaicloudDistTensorflowBase``
is the Caicloud name of the same class.
"""

from __future__ import annotations

from typing import Any

from taas.core.engine import Engine, EngineFactory
from taas.core.launch import run
from taas.core.placement import ClusterInfo
from taas.core.settings import TrainerSettings
from taas.graph.hooks import GraphHooks, InitFn
from taas.runtime.coordination import chief_hosts, expected_trainers
from taas.runtime.lean_server import LeanServer, lean_available


class DistributedTrainer(GraphHooks):
    """Subclass, fill in the hooks you need, run with ``MyTrainer.main()``.

    The loop the hooks fire in, on every training task (PS tasks only serve variables)::

        graph    global_step = <made by the base class, on a PS>
                 with variables round-robin over the PS tasks, ops on this worker:
                   result = build_model(global_step, is_chief, sync, num_replicas)
                     optimizer | None               old style: you built the train op
                     (loss, optimizer)              base builds the train op (sync wrap)
                     loss                           ...with optimizer = create_optimizer()
                     loss_fn | (loss_fn, optimizer) base builds one tower per GPU, averages
                                                    (loss_fn alone: create_optimizer() too)
                   init_fn = get_init_fn(checkpoint_path)   chief, only without a checkpoint
        session  chief: restore latest checkpoint in model_dir, else init + init_fn(session)
                 others: poll (0.1 s) until the chief has initialised
        loop     while global step < max_steps:
                     stop = train(session, global_step, is_chief)   one step; True ends early
                     progress line every N steps/secs; chief: checkpoints, summaries
                     base-built train op and loss NaN/infinite: no update, exit 3 (no after_train)
                 (already at max_steps, e.g. a re-run on a finished model dir: one line
                 "nothing to train", no steps; after_train still runs, every task exits 0)
        end      after_train(session, is_chief)                    evaluate, export_model()
                 session closed (chief: final checkpoint); every PS told "done"; exit 0

    An ``evaluator`` task instead builds the same graph (``build_model``, and
    ``create_optimizer`` for the loss-only forms) and calls ``evaluate(session, global_step)``
    on every new checkpoint in ``model_dir`` until one reaches ``max_steps``.

    Inside the hooks ``self.settings`` (:class:`~taas.core.settings.TrainerSettings`) and
    ``self.cluster`` (:class:`~taas.core.placement.ClusterInfo`) are set, and ``self.global_step``
    from ``build_model`` on; after a richer-form ``build_model`` so are ``self.train_op``,
    ``self.loss`` and ``self.optimizer``.
    """

    @classmethod
    def main(cls, argv: list[str] | None = None) -> None:
        """Run this trainer as a program (reads settings and cluster, exits with the code)."""
        run(cls, argv, graph_engine)


def graph_engine(trainer_cls: type) -> EngineFactory:
    """The engine of every :class:`DistributedTrainer` subclass: :class:`GraphEngine`; a PS
    task whose program has not imported TensorFlow serves without its Python API
    (:func:`lean_ps`)."""

    def make(trainer: Any, settings: TrainerSettings, cluster: ClusterInfo) -> Engine:
        lean = lean_ps(settings, cluster)
        if lean is not None:
            return lean
        from taas.graph.engine import GraphEngine

        return GraphEngine(trainer, settings, cluster)

    return make


def lean_ps(settings: TrainerSettings, cluster: ClusterInfo) -> LeanServer | None:
    """The lean server of a PS task when TensorFlow's Python API is not imported yet (the same
    server options and filters as ``taas.graph.devices.session_config``); None otherwise."""
    if cluster.task_type != "ps" or not cluster.distributed or not lean_available():
        return None
    fields: dict[str, Any] = {
        "allow_soft_placement": settings.allow_soft_placement,
        "log_device_placement": settings.log_device_placement,
        "gpu_options.allow_growth": settings.gpu_memory_growth,
        "device_filters": [cluster.device],
    }
    if settings.gpu_memory_fraction is not None:
        fields["gpu_options.per_process_gpu_memory_fraction"] = settings.gpu_memory_fraction
    return LeanServer(
        cluster.task_name,
        "ps",
        cluster.task_index,
        cluster.cluster_dict(),
        fields,
        expected_trainers(cluster),
        "trainer",
        serves=chief_hosts(cluster),
    )


CaicloudDistTensorflowBase = DistributedTrainer

__all__ = ["CaicloudDistTensorflowBase", "DistributedTrainer", "InitFn", "graph_engine"]
