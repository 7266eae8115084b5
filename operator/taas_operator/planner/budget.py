"""What one TFJob makes, in bytes, before any of it is made: its pods and services as the
apiserver would store them, estimated from the objects the planner would create.

    job_bytes(job, options=None) -> JobBytes      # .pods, .services, .total, .largest_pod
    over_budget(job, limit, options=None) -> str | None   # the refusal message, or None
    DEFAULT_MAX_JOB_BYTES                         # the operator's default limit (256 MiB)

The default, 256 MiB, is an eighth of etcd's default 2 GiB quota, which the whole cluster
shares and which holds old revisions of every object until compaction (the apiserver compacts
every 5 minutes), so a job deleted and applied again counts twice for a while. Dense TF_CONFIG
reaches it near 1,900 replicas with short names; an enableDynamicWorker job (each pod lists the
PS and itself) of 5,000 replicas stays far below it.

An estimate, said so wherever it is shown: each replica type's pod and service are built once
(for its last index, whose name has the most digits, so no other replica's is larger) and
serialized as compact JSON, plus what the apiserver adds to every stored object (uid,
timestamps, managedFields, a pod's status: `POD_STORED_EXTRA`, `SERVICE_STORED_EXTRA`), times
the replicas of that type. Cost: the job's cluster spec (one string of every host, built once)
and at most two objects per replica type, never one per replica: a 5,000-replica job is
estimated in about the time of building one of its pods.

Why it matters: every pod of a dense TFJob carries TF_CONFIG, which lists every replica's host,
so a job's bytes grow with the square of its replicas: 5,000 replicas with a 40-character name
make pods of about 400 KB, 2 GB in all, etcd's whole default quota, and a full etcd refuses
every write in the cluster. The limit keeps one job well inside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from taas_operator.api.constants import DEFAULT_MAX_JOB_BYTES
from taas_operator.api.models import TFJob
from taas_operator.planner.objects import BuildOptions, desired_pod, desired_service
from taas_operator.tfjob.cluster_spec import ClusterEnv

__all__ = ["DEFAULT_MAX_JOB_BYTES", "JobBytes", "describe", "job_bytes", "over_budget"]

#: Bytes the apiserver adds to a stored pod beyond the manifest the operator sends: uid,
#: resourceVersion, creationTimestamp, managedFields (field names, not values), the defaults
#: pod admission writes and the kubelet's status (conditions, IPs, one containerStatus).
POD_STORED_EXTRA = 3 * 1024
#: The same for a headless service (uid, timestamps, managedFields, ipFamilies, defaults).
SERVICE_STORED_EXTRA = 1024


@dataclass(frozen=True)
class JobBytes:
    """Estimated bytes of a job's pods and services in etcd."""

    pods: int
    services: int
    pod_count: int
    largest_pod: int

    @property
    def total(self) -> int:
        """Pods and services together."""
        return self.pods + self.services


def _size(obj: object) -> int:
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def job_bytes(job: TFJob, options: BuildOptions | None = None) -> JobBytes:
    """The estimate, from one pod and one service per replica type (see the module's doc)."""
    options = options or BuildOptions()
    cluster = ClusterEnv(job, options.host_fn(job))
    pods = services = count = largest = 0
    for rtype in job.replica_types():
        replicas = job.spec.tf_replica_specs[rtype].replicas
        if replicas < 1:
            continue
        last = replicas - 1
        pod = _size(desired_pod(job, rtype, last, options, cluster)) + POD_STORED_EXTRA
        service = _size(desired_service(job, rtype, last)) + SERVICE_STORED_EXTRA
        pods += pod * replicas
        services += service * replicas
        count += replicas
        largest = max(largest, pod)
    return JobBytes(pods=pods, services=services, pod_count=count, largest_pod=largest)


def describe(size: JobBytes) -> str:
    """`1,234 pods and as many services of about 12.3 MiB in etcd (estimated; ...)`."""
    pods = f"{size.pod_count:,} pod" + ("" if size.pod_count == 1 else "s")
    return (
        f"{pods} and as many services of about {_mib(size.total)} in etcd "
        f"(estimated; the largest pod about {size.largest_pod / 1024:,.1f} KiB)"
    )


def over_budget(job: TFJob, limit: int, options: BuildOptions | None = None) -> str | None:
    """The refusal when the job's estimate exceeds `limit` bytes (0: no limit), else None."""
    if limit <= 0:
        return None
    size = job_bytes(job, options)
    if size.total <= limit:
        return None
    return (
        f"too large: it would make {describe(size)}, over the limit of {_mib(limit)} for one "
        "job (the operator's --max-job-bytes, the chart's maxJobBytes); every pod's TF_CONFIG "
        "lists every replica's host, so the bytes grow with the square of the replicas; fix: "
        "fewer replicas (or several TFJobs), a shorter TFJob name, spec.enableDynamicWorker: "
        "true (each worker lists only the PS and itself), or ask the cluster's admin to raise "
        "the limit"
    )


def _mib(size: int) -> str:
    if size < 2**20:
        return f"{size / 1024:,.1f} KiB"
    return f"{size / 2**20:,.1f} MiB"
