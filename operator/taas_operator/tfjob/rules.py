"""TensorFlow's rules in the job lifecycle: which replicas decide that a TFJob runs or succeeded.

    is_master_role(job, replica_type, index) -> bool      # pods labelled job-role=master
    is_running(job, counts) -> bool
    has_succeeded(job, counts, worker_zero_succeeded) -> bool
    failure_fails_job(job, replica_type) -> bool

The generic engine (`taas_operator.engine.lifecycle`) counts pods, restarts and recreates them
and applies backoff, deadlines and cleanup as for any Kubeflow job; it asks these functions what
only a TFJob knows (Kubeflow's `tensorflow` controller: `IsMasterRole`, `UpdateJobStatus`):
- the master role: every Chief/Master pod, else worker 0;
- running: some Chief/Master pod is running, else some worker is;
- success: with a Chief/Master, all of them succeeded; else worker 0 succeeded with exit code 0
  (every worker with `successPolicy: AllWorkers`, or when all have already succeeded). A job of
  only PS (or Evaluators) never succeeds;
- with `enableDynamicWorker`, a failed worker does not fail the job (workers come and go).
`counts` maps each replica type of the job to its `ReplicaStatus` (active/succeeded/failed).
"""

from __future__ import annotations

from collections.abc import Mapping

from taas_operator.api.constants import CHIEF_TYPES, ReplicaType
from taas_operator.api.models import ReplicaStatus, TFJob


def is_master_role(job: TFJob, replica_type: str, index: int) -> bool:
    """Chief/Master pods, or worker 0 when the job has neither."""
    if job.has_chief():
        return replica_type in CHIEF_TYPES
    return replica_type == "Worker" and index == 0


def is_running(job: TFJob, counts: Mapping[str, ReplicaStatus]) -> bool:
    """A Chief/Master pod runs (with one in the spec), else a worker does."""
    if job.has_chief():
        return any(counts[t].active > 0 for t in counts if t in CHIEF_TYPES)
    return "Worker" in counts and counts["Worker"].active > 0


def has_succeeded(
    job: TFJob, counts: Mapping[str, ReplicaStatus], worker_zero_succeeded: bool
) -> bool:
    """Whether the job succeeded; `worker_zero_succeeded`: worker 0's current pod ended with
    exit code 0 (or none recorded) and is not being deleted."""
    specs = job.spec.tf_replica_specs
    if job.has_chief():
        return all(
            counts[t].succeeded >= specs[t].replicas
            for t in job.replica_types()
            if t in CHIEF_TYPES
        )
    worker = specs.get("Worker")
    if worker is None:
        return False
    if counts["Worker"].succeeded >= worker.replicas:
        return True
    if job.spec.success_policy == "AllWorkers":
        return False
    return worker_zero_succeeded


def failure_fails_job(job: TFJob, replica_type: ReplicaType) -> bool:
    """Whether a failed, not retried pod of this type fails the job (not a dynamic worker)."""
    return not (job.spec.enable_dynamic_worker and replica_type == "Worker")
