"""The Worker count as the scale subresource sees it, and the event of a change.

    note_worker_scale(job, status) -> Event | None   # sets status.workerReplicas, the selector

`kubectl scale tfjob/NAME`, `taas scale` and an autoscaler write
spec.tfReplicaSpecs.Worker.replicas through the CRD's scale subresource; the status carries
what they read back: replicaStatuses.Worker.selector (Kubeflow's field: the label selector of
the job's worker pods) and, TaaS, workerReplicas (the Worker count the last pass planned for).
A pass whose spec differs from workerReplicas is a scale change: one Normal event (TFJobScaled)
naming both counts; the pods of the added or removed indices are made or deleted by the usual
rules (`planner.lifecycle`), the others are not touched. The first pass only records the
count; a finished job's stays as it was.
"""

from __future__ import annotations

from taas_operator.api.constants import LABEL_REPLICA_TYPE
from taas_operator.api.models import ReplicaStatus, TFJob, TFJobStatus
from taas_operator.planner.objects import job_selector
from taas_operator.planner.plan import Event

__all__ = ["REASON_SCALED", "note_worker_scale", "worker_selector"]

REASON_SCALED = "TFJobScaled"
WORKER = "Worker"


def worker_selector(job_name: str) -> str:
    """The label selector (string form) of the job's Worker pods."""
    labels = {**job_selector(job_name), LABEL_REPLICA_TYPE: WORKER.lower()}
    return ",".join(f"{k}={v}" for k, v in labels.items())


def note_worker_scale(job: TFJob, status: TFJobStatus) -> Event | None:
    """Write the Worker count and selector into `status`; the event of a change, if any (none
    for a finished job, whose pods are no longer made)."""
    spec = job.spec.tf_replica_specs.get(WORKER)
    if spec is None:
        status.worker_replicas = None
        return None
    worker = status.replica_statuses.setdefault(WORKER, ReplicaStatus())
    worker.selector = worker_selector(job.name)
    before = status.worker_replicas
    if status.finished and before is not None:
        return None  # a finished job makes no pods: its count stays the one it ran with
    status.worker_replicas = spec.replicas
    if before is None or before == spec.replicas:
        return None
    way = "up" if spec.replicas > before else "down"
    message = f"TFJob {job.name} scaled {way} from {before} to {spec.replicas} Worker replicas."
    return Event(type="Normal", reason=REASON_SCALED, message=message)
