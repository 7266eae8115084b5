"""TF_CONFIG and the classic cluster env vars for one replica, byte-compatible with Kubeflow.

    HostFn = Callable[[str, int, int], str]      # (lowercase type, index, port) -> "host:port"
    service_hosts(job, cluster_domain="") -> HostFn
    replica_port(spec: ReplicaSpec) -> int       # the tensorflow container's tfjob-port, or 2222
    is_distributed(job) -> bool                  # total replicas != 1
    cluster_spec(job, hosts) -> dict[str, list[str]]
    tf_config(job, replica_type, index, hosts, cluster=None) -> str
    classic_env(job, replica_type, index, hosts, cluster=None) -> dict[str, str]
    cluster_env(job, replica_type, index, hosts) -> list[dict]   # env entries for the container
    ClusterEnv(job, hosts).env(replica_type, index)    # the same, built once for many replicas
    ClusterEnv(job, hosts).pod_bytes                   # about what that env weighs in one pod

`hosts` is a strategy: in Kubernetes it is `service_hosts(job, cluster_domain)`, giving
`<job>-<type>-<i>.<namespace>.svc[.<domain>]:<port>` (the cluster domain is an explicit argument,
never read from the environment); the local runner passes its own function mapping each replica
to `127.0.0.1:<free port>`. Everything else is the same code.

Format, as Go's encoding/json writes Kubeflow's structs: compact, `{"cluster":{...},"task":
{"type":"worker","index":0},"environment":"cloud"}`, cluster keys sorted (a Go map), every known
replica type present (Evaluator as `evaluator`, Master stays `master`).

enableDynamicWorker (Kubeflow's sparse form, no "environment"): `{"cluster":{"worker":{"<i>":
"<own host>"},"ps":[...all ps...]},"task":{...}}` for a worker, `{"worker":{},"ps":[<own>]}` for a
PS. TaaS does better than Kubeflow for the other types (Kubeflow gives them empty maps, which TF
rejects, kubeflow/trainer#1763): Chief/Master/Evaluator get `{"worker":{},"ps":[...all ps...],
"<own type>":[<own host>]}`. Where Kubeflow would write `"ps":null` (no PS), TaaS writes `[]`.

Classic variables (TaaS) for programs written with --ps_hosts/--worker_hosts/--job_name/
--task_index: PS_HOSTS, WORKER_HOSTS (comma-separated host:port, empty when none), CHIEF_HOSTS
(Chief or Master hosts, only when one is present), JOB_NAME (lowercase type), TASK_INDEX. With
enableDynamicWorker they name what the pod's sparse TF_CONFIG names (every PS and the pod
itself), so a pod's bytes do not grow with the workers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from taas_operator.api.constants import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    REPLICA_TYPES,
)
from taas_operator.api.models import ReplicaSpec, TFJob

HostFn = Callable[[str, int, int], str]
"""(lowercase replica type, index, port) -> "host:port"."""

TF_CONFIG = "TF_CONFIG"
#: Every variable `cluster_env` sets (a container's own entries of these names are replaced).
CLUSTER_ENV_NAMES = (TF_CONFIG, "PS_HOSTS", "WORKER_HOSTS", "CHIEF_HOSTS", "JOB_NAME", "TASK_INDEX")


def replica_name(job_name: str, replica_type: str, index: int) -> str:
    """Pod and service name: `<job>-<lowercase type>-<index>`."""
    return f"{job_name}-{replica_type.lower()}-{index}".replace("/", "-")


def service_hosts(job: TFJob, cluster_domain: str = "") -> HostFn:
    """Hosts of the per-replica headless services: `<svc>.<ns>.svc[.<domain>]:<port>`."""
    suffix = f".{cluster_domain.strip('.')}" if cluster_domain.strip(".") else ""

    def host(replica_type: str, index: int, port: int) -> str:
        name = replica_name(job.name, replica_type, index)
        return f"{name}.{job.namespace}.svc{suffix}:{port}"

    return host


def replica_port(spec: ReplicaSpec) -> int:
    """containerPort of the `tfjob-port` port of the tensorflow container, else 2222."""
    for container in spec.containers():
        if container.get("name") == DEFAULT_CONTAINER_NAME:
            for port in container.get("ports") or []:
                if port.get("name") == DEFAULT_PORT_NAME and port.get("containerPort"):
                    return int(port["containerPort"])
    return DEFAULT_PORT


def is_distributed(job: TFJob) -> bool:
    """Kubeflow sets TF_CONFIG only when the known replica types add up to more (or less) than 1."""
    return sum(s.replicas for s in job.spec.tf_replica_specs.values()) != 1


def cluster_spec(job: TFJob, hosts: HostFn) -> dict[str, list[str]]:
    """Lowercase type -> hosts of every replica, keys sorted like a Go map."""
    spec: dict[str, list[str]] = {}
    for rtype in REPLICA_TYPES:
        replica = job.spec.tf_replica_specs.get(rtype)
        if replica is None:
            continue
        port = replica_port(replica)
        spec[rtype.lower()] = [hosts(rtype.lower(), i, port) for i in range(replica.replicas)]
    return dict(sorted(spec.items()))


def _dumps(value: Any) -> str:
    # Go's encoding/json: compact; it also escapes <, > and & (never present in host names).
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tf_config(
    job: TFJob,
    replica_type: str,
    index: int,
    hosts: HostFn,
    cluster: dict[str, list[str]] | None = None,
) -> str:
    """The TF_CONFIG value for one replica (dense, or sparse with enableDynamicWorker);
    `cluster`: `cluster_spec(job, hosts)` when the caller has it already."""
    rtype = replica_type.lower()
    cluster = cluster if cluster is not None else cluster_spec(job, hosts)
    task = {"type": rtype, "index": index}
    if not job.spec.enable_dynamic_worker:
        return _dumps({"cluster": cluster, "task": task, "environment": "cloud"})
    own = cluster.get(rtype, [])
    own_host = own[index] if index < len(own) else hosts(rtype, index, 0)
    sparse: dict[str, Any]
    if rtype == "worker":
        sparse = {"worker": {str(index): own_host}, "ps": cluster.get("ps", [])}
    elif rtype == "ps":
        sparse = {"worker": {}, "ps": [own_host]}
    else:
        sparse = {"worker": {}, "ps": cluster.get("ps", []), rtype: [own_host]}
    return _dumps({"cluster": sparse, "task": task})


def classic_env(
    job: TFJob,
    replica_type: str,
    index: int,
    hosts: HostFn,
    cluster: dict[str, list[str]] | None = None,
) -> dict[str, str]:
    """PS_HOSTS, WORKER_HOSTS, CHIEF_HOSTS (when a Chief/Master exists), JOB_NAME, TASK_INDEX."""
    cluster = cluster if cluster is not None else cluster_spec(job, hosts)
    env = {
        "PS_HOSTS": ",".join(cluster.get("ps", [])),
        "WORKER_HOSTS": ",".join(cluster.get("worker", [])),
    }
    chief = cluster.get("chief") or cluster.get("master")
    if chief:
        env["CHIEF_HOSTS"] = ",".join(chief)
    env["JOB_NAME"] = replica_type.lower()
    env["TASK_INDEX"] = str(index)
    return env


class ClusterEnv:
    """The cluster env of the replicas of one job, for as many of them as asked: the cluster
    spec, its JSON and the classic host lists are built once and shared by every replica's
    entries. A job of a thousand replicas gives each pod tens of KB of hosts: built per pod,
    building its pods took seconds and memory the interpreter kept; built once, the classic
    lists are one string for all."""

    def __init__(self, job: TFJob, hosts: HostFn) -> None:
        self.job, self.hosts = job, hosts
        self.cluster = cluster_spec(job, hosts)
        self.distributed = is_distributed(job)
        self._cluster_json = _dumps(self.cluster)
        self._classic = classic_env(job, "", 0, hosts, self.cluster)

    @property
    def pod_bytes(self) -> int:
        """About how many bytes of cluster env one pod carries (its TF_CONFIG and host lists)."""
        return len(self._cluster_json) + sum(len(v) for v in self._classic.values())

    def tf_config(self, replica_type: str, index: int) -> str:
        """`tf_config(job, replica_type, index, hosts)`, the same characters."""
        task = {"type": replica_type.lower(), "index": index}
        if self.job.spec.enable_dynamic_worker:
            return tf_config(self.job, replica_type, index, self.hosts, self.cluster)
        return f'{{"cluster":{self._cluster_json},"task":{_dumps(task)},"environment":"cloud"}}'

    def env(self, replica_type: str, index: int) -> list[dict[str, str]]:
        """Env entries for the tensorflow container: TF_CONFIG (when distributed), then the
        classic variables."""
        env: list[dict[str, str]] = []
        if self.distributed:
            env.append({"name": TF_CONFIG, "value": self.tf_config(replica_type, index)})
        if self.job.spec.enable_dynamic_worker:
            classic = self._sparse_classic(replica_type.lower(), index)
        else:
            classic = {**self._classic}
        classic.update(JOB_NAME=replica_type.lower(), TASK_INDEX=str(index))
        env.extend({"name": name, "value": value} for name, value in classic.items())
        return env

    def _sparse_classic(self, rtype: str, index: int) -> dict[str, str]:
        """With enableDynamicWorker the host lists name what the pod's TF_CONFIG names (every
        PS and itself), not every replica: a pod stays small however many workers come."""
        own_list = self.cluster.get(rtype, [])
        own = own_list[index] if index < len(own_list) else self.hosts(rtype, index, 0)
        classic = {
            "PS_HOSTS": own if rtype == "ps" else ",".join(self.cluster.get("ps", [])),
            "WORKER_HOSTS": own if rtype == "worker" else "",
        }
        if "chief" in self.cluster or "master" in self.cluster:
            classic["CHIEF_HOSTS"] = own if rtype in ("chief", "master") else ""
        return classic


def cluster_env(job: TFJob, replica_type: str, index: int, hosts: HostFn) -> list[dict[str, str]]:
    """Env entries for the tensorflow container: TF_CONFIG (when distributed), then classic."""
    return ClusterEnv(job, hosts).env(replica_type, index)
