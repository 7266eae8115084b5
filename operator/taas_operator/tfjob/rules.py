"""TensorFlow's rules in the job lifecycle: which replicas decide that a TFJob runs or succeeded.

    is_master_role(job, replica_type, index) -> bool      # pods labelled job-role=master
    chief_slot(job) -> (replica type, index) | None       # the replica whose progress counts
    is_running(job, counts) -> bool
    has_succeeded(job, counts, worker_zero_succeeded) -> bool
    failure_fails_job(job, replica_type) -> bool
    restarts_whole(job) -> bool                           # TaaS: one lost, all restarted

The planner (`taas_operator.planner.lifecycle`) counts pods, restarts and recreates them
and applies backoff, deadlines and cleanup as for any Kubeflow job; it asks these functions what
only a TFJob knows (Kubeflow's `tensorflow` controller: `IsMasterRole`, `UpdateJobStatus`):
- the master role: every Chief/Master pod, else worker 0;
- running: some Chief/Master pod is running, else some worker is;
- success: with a Chief/Master, all of them succeeded; else worker 0 succeeded with exit code 0
  (every worker with `successPolicy: AllWorkers`, or when all have already succeeded). A job of
  only PS (or Evaluators) never succeeds;
- with `enableDynamicWorker`, a failed worker does not fail the job (workers come and go);
- TaaS: a synchronous job (all-reduce under MultiWorkerMirroredStrategy) cannot go on without
  one of its workers: the others wait in a collective, and a replacement joins a cluster that
  is hung. With the annotation `taas.dev/restart-scope: job`, losing one (a retryable exit, its
  node lost) restarts every trainer replica (Volcano's RestartJob, Ray Train's group restart).
  Without it (or `replica`), Kubeflow's rule: the lost replica alone is made again, which is
  what ParameterServerStrategy and graph mode tolerate, and what a TFJob written for Kubeflow
  gets there.
`counts` maps each replica type of the job to its `ReplicaStatus` (active/succeeded/failed).
"""

from __future__ import annotations

from collections.abc import Mapping

from taas_operator.api.constants import (
    CHIEF_TYPES,
    REPLICA_TYPES,
    RESTART_SCOPE_ANNOTATION,
    RESTART_SCOPES,
    ReplicaType,
)
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


#: The replica types that train together: restarted together when the job restarts whole.
TRAINER_TYPES: frozenset[str] = frozenset({"Chief", "Master", "Worker"})


def restart_scope(job: TFJob) -> str:
    """ "job" or "replica": the annotation's value when it is one of them, else "replica"."""
    given = (job.metadata.annotations.get(RESTART_SCOPE_ANNOTATION) or "").strip().lower()
    return given if given in RESTART_SCOPES else "replica"


def restarts_whole(job: TFJob) -> bool:
    """TaaS: whether losing one replica restarts every trainer replica (see the module)."""
    return restart_scope(job) == "job"


def chief_slot(job: TFJob) -> tuple[ReplicaType, int] | None:
    """(replica type, index) of the pod whose progress counts: the first Chief/Master, else
    worker 0 (`is_master_role`)."""
    specs = job.spec.tf_replica_specs
    for rtype in REPLICA_TYPES:
        if rtype in CHIEF_TYPES and rtype in specs and specs[rtype].replicas > 0:
            return rtype, 0
    worker = specs.get("Worker")
    return ("Worker", 0) if worker is not None and worker.replicas > 0 else None
