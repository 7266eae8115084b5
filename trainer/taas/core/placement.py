"""Where this process sits in the training cluster: TF_CONFIG, classic env, flags, or alone.

Sources, first found wins:

1. ``TF_CONFIG`` (Kubeflow / TaaS operator): ``{"cluster": {"ps": [...], "worker": [...]},
   "task": {"type": "worker", "index": 0}}``; task types ps, worker, chief, master, evaluator;
   the dynamic-worker form where a job is a map ``{"<index>": "host:port"}`` is accepted.
2. ``PS_HOSTS`` / ``WORKER_HOSTS`` / ``CHIEF_HOSTS`` (comma-separated host:port) with
   ``JOB_NAME`` and ``TASK_INDEX``.
3. Flags ``--ps_hosts --worker_hosts --chief_hosts --job_name --task_index``.
4. None of these: a single local process.

The chief is the ``chief`` (or ``master``) task, else worker 0. This module does not import
TensorFlow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from taas.core.settings import SettingsError

TASK_TYPES = ("ps", "worker", "chief", "master", "evaluator")
# Tasks that run training steps (the "replicas"), in chief-first order.
TRAINER_TYPES = ("chief", "master", "worker")
CLUSTER_FLAGS = ("ps_hosts", "worker_hosts", "chief_hosts", "job_name", "task_index")


class ClusterInfo(BaseModel):
    """The cluster (job -> {index: host}) and this task's place in it."""

    model_config = ConfigDict(frozen=True)

    jobs: dict[str, dict[int, str]] = {}
    task_type: str = "worker"
    task_index: int = 0
    source: str = "local"

    @property
    def distributed(self) -> bool:
        """True when there is a cluster to join (not a single local process)."""
        return bool(self.jobs)

    @property
    def chief_task(self) -> tuple[str, int]:
        """The (type, index) of the chief: chief/master task, else worker 0."""
        for kind in ("chief", "master"):
            if self.jobs.get(kind):
                return kind, min(self.jobs[kind])
        return "worker", 0

    @property
    def is_chief(self) -> bool:
        """True for the task that initialises, checkpoints and writes summaries."""
        if not self.distributed:
            return True
        return (self.task_type, self.task_index) == self.chief_task

    @property
    def ps_tasks(self) -> list[tuple[int, str]]:
        """(index, host) of every PS task, sorted by index."""
        return sorted(self.jobs.get("ps", {}).items())

    @property
    def trainer_tasks(self) -> list[tuple[str, int]]:
        """(type, index) of every task that trains (chief/master + workers) that we know of."""
        return [(kind, i) for kind in TRAINER_TYPES for i in sorted(self.jobs.get(kind, {}))]

    @property
    def num_replicas(self) -> int:
        """How many tasks train (at least 1)."""
        return max(1, len(self.trainer_tasks))

    @property
    def dynamic(self) -> bool:
        """True when the cluster came as maps (each task sees only part of it)."""
        return self.source == "TF_CONFIG (dynamic workers)"

    @property
    def task_name(self) -> str:
        """Short prefix for log lines, e.g. ``worker:1``."""
        return f"{self.task_type}:{self.task_index}" if self.distributed else "local"

    @property
    def device(self) -> str:
        """This task's device prefix, e.g. ``/job:worker/task:1``."""
        return f"/job:{self.task_type}/task:{self.task_index}" if self.distributed else ""

    def cluster_dict(self) -> dict[str, list[str] | dict[int, str]]:
        """The cluster for ``tf.train.ClusterSpec`` (evaluator excluded: it does not serve)."""
        out: dict[str, list[str] | dict[int, str]] = {}
        for kind, tasks in self.jobs.items():
            if kind == "evaluator" or not tasks:
                continue
            dense = sorted(tasks) == list(range(len(tasks)))
            out[kind] = [tasks[i] for i in sorted(tasks)] if dense else dict(tasks)
        return out


def resolve_cluster(env: Mapping[str, str], argv: Sequence[str] = ()) -> ClusterInfo:
    """Find the cluster from ``env`` and ``argv`` (see the module docstring)."""
    if env.get("TF_CONFIG", "").strip():
        return _from_tf_config(env["TF_CONFIG"])
    classic = {k: env[k.upper()] for k in CLUSTER_FLAGS if env.get(k.upper(), "").strip()}
    if classic:
        return _from_classic(classic, "env")
    flags = _cluster_flags(argv)
    if flags:
        return _from_classic(flags, "flags")
    return ClusterInfo()


def strip_cluster_flags(argv: Sequence[str]) -> list[str]:
    """``argv`` without the cluster flags (so user flag parsers do not see them)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        key, eq, _ = arg.lstrip("-").partition("=")
        if arg.startswith("--") and key.replace("-", "_") in CLUSTER_FLAGS:
            skip = not eq
            continue
        out.append(arg)
    return out


def _cluster_flags(argv: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for i, arg in enumerate(argv):
        key, eq, value = arg.lstrip("-").partition("=")
        key = key.replace("-", "_")
        if arg.startswith("--") and key in CLUSTER_FLAGS:
            if not eq:
                if i + 1 >= len(argv):
                    raise SettingsError(f"flag --{key} needs a value, e.g. --{key}=VALUE")
                value = argv[i + 1]
            found[key] = value
    return found


def _from_tf_config(raw: str) -> ClusterInfo:
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"TF_CONFIG is not valid JSON ({exc}); fix the TF_CONFIG env") from None
    if not isinstance(config, dict):
        raise SettingsError("TF_CONFIG must be a JSON object with 'cluster' and 'task'")
    cluster = config.get("cluster") or {}
    task = config.get("task") or {}
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise SettingsError("TF_CONFIG 'cluster' and 'task' must be JSON objects")
    jobs: dict[str, dict[int, str]] = {}
    dynamic = False
    for kind, hosts in cluster.items():
        kind = str(kind).lower()
        if kind not in TASK_TYPES:
            raise SettingsError(
                f"TF_CONFIG cluster has unknown task type {kind!r}; use one of {TASK_TYPES}"
            )
        if isinstance(hosts, dict):
            dynamic = True
            try:
                jobs[kind] = {int(i): str(h) for i, h in hosts.items()}
            except ValueError:
                raise SettingsError(
                    f'TF_CONFIG cluster.{kind} map keys must be task indices like "0"'
                ) from None
        elif isinstance(hosts, list):
            jobs[kind] = {i: str(h) for i, h in enumerate(hosts)}
        else:
            raise SettingsError(f"TF_CONFIG cluster.{kind} must be a list of host:port")
    task_type = str(task.get("type", "")).lower()
    if task_type not in TASK_TYPES:
        raise SettingsError(f"TF_CONFIG task.type {task.get('type')!r} is not one of {TASK_TYPES}")
    index = _index(task.get("index", 0), "TF_CONFIG task.index")
    info = ClusterInfo(
        jobs=jobs,
        task_type=task_type,
        task_index=index,
        source="TF_CONFIG (dynamic workers)" if dynamic else "TF_CONFIG",
    )
    _check_in_cluster(info, "TF_CONFIG")
    return info


def _from_classic(values: Mapping[str, str], source: str) -> ClusterInfo:
    def name(key: str) -> str:
        return key.upper() if source == "env" else f"--{key}"

    jobs: dict[str, dict[int, str]] = {}
    for kind in ("ps", "worker", "chief"):
        hosts = [h.strip() for h in values.get(f"{kind}_hosts", "").split(",") if h.strip()]
        if hosts:
            jobs[kind] = dict(enumerate(hosts))
    if not jobs.get("worker") and not jobs.get("chief"):
        raise SettingsError(f"{name('worker_hosts')} is required with {name('ps_hosts')}")
    task_type = values.get("job_name", "").strip().lower()
    if task_type not in TASK_TYPES:
        raise SettingsError(f"{name('job_name')} must be one of {TASK_TYPES}, got {task_type!r}")
    info = ClusterInfo(
        jobs=jobs,
        task_type=task_type,
        task_index=_index(values.get("task_index", "0"), name("task_index")),
        source=source,
    )
    _check_in_cluster(info, source)
    return info


def _index(value: object, what: str) -> int:
    try:
        index = int(str(value))
    except ValueError:
        raise SettingsError(f"{what} must be a non-negative integer, got {value!r}") from None
    if index < 0:
        raise SettingsError(f"{what} must be a non-negative integer, got {value!r}")
    return index


def _check_in_cluster(info: ClusterInfo, source: str) -> None:
    if info.task_type == "evaluator":
        return
    if info.task_index not in info.jobs.get(info.task_type, {}):
        raise SettingsError(
            f"{source}: task {info.task_type}:{info.task_index} is not in the cluster "
            f"{ {k: sorted(v) for k, v in info.jobs.items()} }; fix the task type/index"
        )
