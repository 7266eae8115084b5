"""TensorFlow 2: the ``tf.distribute`` strategy and role of one task, from the cluster's shape.

    plan_strategy(settings, cluster, gpus) -> StrategyPlan     (pure: no TensorFlow import)

=================================  =================================  ==========================
job shape (TF_CONFIG)              strategy                           roles
=================================  =================================  ==========================
ps tasks and a chief (or master)   ParameterServerStrategy            chief coordinates; PS and
                                                                      workers serve
ps tasks, workers, no chief        ParameterServerStrategy            worker 0 coordinates (to
                                                                      TensorFlow it is the chief,
                                                                      worker i is worker i-1);
                                                                      PS, other workers serve
workers (and a chief), no ps       MultiWorkerMirroredStrategy        every one trains (sync)
one process, 2+ GPUs (or           MirroredStrategy                   trains, one replica per
``num_towers`` CPU towers)                                            device
one process                        default strategy                   trains
evaluator (any shape)              default strategy, alone            evaluates checkpoints
=================================  =================================  ==========================

Worker 0 turned coordinator keeps a TFJob of PS + Workers (the TaaS 2.0 shape, no Chief replica)
working unchanged, and its success is still the job's (worker 0 is the TFJob's chief): the
coordinator is where the Python loop, checkpoints and ``after_train`` run. Such a job needs at
least two workers (one coordinates, one computes).

Settings that mean nothing to a strategy are refused with :class:`SettingsError` (exit 2):
``replicas_to_aggregate`` and ``backup_workers`` (graph mode's SyncReplicasOptimizer),
``gpu_memory_fraction`` (a TF1 session option), ``sync`` contradicting the strategy (PS training is
asynchronous, MultiWorkerMirroredStrategy synchronous), CPU towers in a multi-process job, and
the dynamic-worker TF_CONFIG (a worker that sees only itself cannot join a strategy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from taas.core.placement import ClusterInfo
from taas.core.settings import SettingsError, TrainerSettings, sources

StrategyKind = Literal["default", "mirrored", "multi_worker_mirrored", "parameter_server"]
Role = Literal["train", "coordinate", "serve", "evaluate"]

STRATEGY_NAMES: dict[str, str] = {
    "default": "default strategy",
    "mirrored": "MirroredStrategy",
    "multi_worker_mirrored": "MultiWorkerMirroredStrategy",
    "parameter_server": "ParameterServerStrategy",
}


@dataclass(frozen=True)
class StrategyPlan:
    """What one task does: its strategy, its role, and the cluster as TensorFlow sees it.

    ``cluster_spec``/``task_type``/``task_index`` are TensorFlow's view (PS training without a
    chief renames worker 0 to ``chief``); ``replicas`` counts the tasks stepping together (the
    global batch is ``batch_size * replicas``); ``devices`` are MirroredStrategy's.
    """

    kind: StrategyKind
    role: Role
    cluster_spec: dict[str, list[str]] = field(default_factory=dict)
    task_type: str = "worker"
    task_index: int = 0
    replicas: int = 1
    devices: tuple[str, ...] = ()
    is_chief: bool = True

    @property
    def name(self) -> str:
        """The strategy's class name, for log lines."""
        return STRATEGY_NAMES[self.kind]

    def hosts(self, job: str) -> list[str]:
        """Host:port of every task of ``job`` in TensorFlow's view."""
        return list(self.cluster_spec.get(job, []))

    @property
    def inter_op_threads(self) -> int:
        """A ParameterServerStrategy task's inter-op threads: on few cores a PS training task
        deadlocks with fewer than workers + 1 (TENSORFLOW-NOTES); one more for the "done"
        queue's waiting session."""
        return len(self.hosts("worker")) + 2


def plan_strategy(settings: TrainerSettings, cluster: ClusterInfo, gpus: int) -> StrategyPlan:
    """The plan for this task (see the module table); :class:`SettingsError` when it cannot be."""
    _refuse_graph_mode_settings(settings)
    if cluster.task_type == "evaluator":
        return StrategyPlan("default", "evaluate", is_chief=False)
    if not cluster.distributed:
        return _single_process(settings, gpus)
    if cluster.dynamic:
        raise SettingsError(
            "TF_CONFIG is in the dynamic-worker form (enableDynamicWorker: each worker sees only "
            "itself), but TensorFlow 2 strategies need the whole cluster; set "
            "spec.enableDynamicWorker to false (or use taas.DistributedTrainer)"
        )
    if settings.num_towers and settings.num_towers > 1 and not gpus:
        raise SettingsError(
            f"setting 'num_towers' ({sources('num_towers')}): CPU towers are for one process "
            "(MirroredStrategy); a multi-process job runs one replica per CPU task. Unset it"
        )
    if cluster.ps_tasks:
        return _parameter_server(settings, cluster)
    return _multi_worker(settings, cluster)


def _refuse_graph_mode_settings(settings: TrainerSettings) -> None:
    given = settings.model_fields_set
    for name, why in (
        ("replicas_to_aggregate", "graph mode's SyncReplicasOptimizer"),
        ("backup_workers", "graph mode's SyncReplicasOptimizer"),
        ("gpu_memory_fraction", "a graph-mode session option (use gpu_memory_growth)"),
    ):
        if name in given and getattr(settings, name):
            raise SettingsError(
                f"setting '{name}' ({sources(name)}) is for {why}; TensorFlow 2 strategies "
                "(taas.KerasTrainer) have no such option. Unset it"
            )


def _single_process(settings: TrainerSettings, gpus: int) -> StrategyPlan:
    towers = settings.num_towers
    if gpus > 1 and (towers is None or towers > 1):
        count = min(gpus, towers or gpus)
        return StrategyPlan("mirrored", "train", devices=_devices("GPU", count))
    if not gpus and towers and towers > 1:
        return StrategyPlan("mirrored", "train", devices=_devices("CPU", towers))
    return StrategyPlan("default", "train")


def _devices(kind: str, count: int) -> tuple[str, ...]:
    return tuple(f"/device:{kind}:{i}" for i in range(count))


def _multi_worker(settings: TrainerSettings, cluster: ClusterInfo) -> StrategyPlan:
    if "sync" in settings.model_fields_set and not settings.sync:
        raise SettingsError(
            f"setting 'sync' ({sources('sync')}) is false, but a job of workers without PS "
            "tasks trains with MultiWorkerMirroredStrategy, which is always synchronous. Unset "
            "it, or add PS replicas for asynchronous ParameterServerStrategy training"
        )
    spec = _dense(cluster)
    if "master" in spec:  # TensorFlow 2 knows the chief role as "chief" only
        spec["chief"] = spec.pop("master")
    task_type = "chief" if cluster.task_type == "master" else cluster.task_type
    replicas = sum(len(spec.get(kind, [])) for kind in ("chief", "worker"))
    return StrategyPlan(
        "multi_worker_mirrored",
        "train",
        spec,
        task_type,
        cluster.task_index,
        replicas=replicas,
        is_chief=cluster.is_chief,
    )


def _parameter_server(settings: TrainerSettings, cluster: ClusterInfo) -> StrategyPlan:
    if settings.sync:
        raise SettingsError(
            f"setting 'sync' ({sources('sync')}) is true, but a job with PS tasks trains with "
            "ParameterServerStrategy, which is asynchronous. Unset it, or drop the PS replicas "
            "for synchronous MultiWorkerMirroredStrategy training"
        )
    spec = _dense(cluster)
    chief = spec.pop("chief", None) or spec.pop("master", None)
    task_type, index = cluster.task_type, cluster.task_index
    if task_type == "master":
        task_type = "chief"
    if chief is None:
        workers = spec.get("worker", [])
        if len(workers) < 2:
            raise SettingsError(
                "a job with PS tasks and no Chief replica needs at least 2 workers: TaaS makes "
                "worker 0 the ParameterServerStrategy coordinator and the others compute. Add a "
                "Chief replica (or a second worker)"
            )
        chief, spec["worker"] = workers[:1], workers[1:]
        if task_type == "worker":
            task_type, index = ("chief", 0) if index == 0 else ("worker", index - 1)
    if not spec.get("worker"):
        raise SettingsError(
            "a job with PS tasks needs Worker replicas: the chief coordinates, workers compute"
        )
    spec["chief"] = chief
    role: Role = "coordinate" if task_type == "chief" else "serve"
    return StrategyPlan(
        "parameter_server",
        role,
        spec,
        task_type,
        index,
        replicas=1,
        is_chief=role == "coordinate",
    )


def _dense(cluster: ClusterInfo) -> dict[str, list[str]]:
    """TensorFlow's cluster spec (evaluator left out: it trains in no strategy)."""
    return {
        kind: [hosts[i] for i in sorted(hosts)]
        for kind, hosts in cluster.jobs.items()
        if kind != "evaluator" and hosts
    }
