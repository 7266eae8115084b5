"""The Worker count as the scale subresource sees it, and the event of a change.

    note_worker_scale(job, status) -> Event | None   # sets status.workerReplicas, the selector
    held_scale(job, limit, options=None) -> (job at its last count, refusal) | None

`kubectl scale tfjob/NAME`, `taas scale` and an autoscaler write
spec.tfReplicaSpecs.Worker.replicas through the CRD's scale subresource; the status carries
what they read back: replicaStatuses.Worker.selector (Kubeflow's field: the label selector of
the job's worker pods) and, TaaS, workerReplicas (the Worker count the last pass planned for).
A pass whose spec differs from workerReplicas is a scale change: one Normal event (TFJobScaled)
naming both counts; the pods of the added or removed indices are made or deleted by the usual
rules (`planner.lifecycle`), the others are not touched. The first pass only records the
count; a finished job's status is left as it ended.

A scale-up of a running job past the operator's byte budget (`planner.budget`; the apiserver
cannot count bytes, its schema only bounds the replicas) is refused without ending the job:
the pass plans for the count the job had (`held_scale`), the operator says why in a Warning
event (ScaleRefused), and the job goes on until the count is lowered.
"""

from __future__ import annotations

from typing import Final

from taas_operator.api.constants import LABEL_REPLICA_TYPE
from taas_operator.api.models import ReplicaStatus, TFJob, TFJobStatus
from taas_operator.planner.budget import over_budget
from taas_operator.planner.objects import BuildOptions, job_selector
from taas_operator.planner.plan import Event

__all__ = [
    "REASON_SCALED",
    "REASON_SCALE_REFUSED",
    "held_scale",
    "note_worker_scale",
    "worker_selector",
]

REASON_SCALED = "TFJobScaled"
REASON_SCALE_REFUSED = "ScaleRefused"
WORKER: Final = "Worker"


def worker_selector(job_name: str) -> str:
    """The label selector (string form) of the job's Worker pods."""
    labels = {**job_selector(job_name), LABEL_REPLICA_TYPE: WORKER.lower()}
    return ",".join(f"{k}={v}" for k, v in labels.items())


def note_worker_scale(job: TFJob, status: TFJobStatus) -> Event | None:
    """Write the Worker count and selector into `status`; the event of a change, if any (none
    for a finished job, whose pods are no longer made)."""
    spec = job.spec.tf_replica_specs.get(WORKER)
    if status.finished:
        return None  # makes no pods: its status stays as it ended (a job taken over, too)
    if spec is None:
        status.worker_replicas = None
        return None
    worker = status.replica_statuses.setdefault(WORKER, ReplicaStatus())
    worker.selector = worker_selector(job.name)
    before = status.worker_replicas
    status.worker_replicas = spec.replicas
    if before is None or before == spec.replicas:
        return None
    way = "up" if spec.replicas > before else "down"
    message = f"TFJob {job.name} scaled {way} from {before} to {spec.replicas} Worker replicas."
    return Event(type="Normal", reason=REASON_SCALED, message=message)


def held_scale(
    job: TFJob, limit: int, options: BuildOptions | None = None
) -> tuple[TFJob, str] | None:
    """For a job scaled up past `limit` bytes since its last pass: the job with the Worker
    count it had (what the pass plans for) and the refusal; None otherwise."""
    spec, before = job.spec.tf_replica_specs.get(WORKER), job.status.worker_replicas
    if spec is None or before is None or spec.replicas <= before or job.status.finished:
        return None
    refused = over_budget(job, limit, options)
    if refused is None:
        return None
    kept = job.model_copy(deep=True)
    kept.spec.tf_replica_specs[WORKER].replicas = before
    message = (
        f"TFJob {job.namespace}/{job.name}: scaling from {before} to {spec.replicas} Worker "
        f"replicas refused, the job goes on with {before}: at {spec.replicas} it would be "
        f"{refused}; to lift the refusal, scale back to {before} or fewer"
    )
    return kept, message
