"""The TFJob planner: desired objects and the lifecycle, both pure (no I/O).

`plan_job` is what the operator's pass and `taas run` share: (job, observed pods, now) -> Plan.
The lifecycle rules are Kubeflow's common ones (conditions, restart policies, backoffLimit,
deadlines, cleanup, TTL, suspend, scaling); what only a TFJob knows (which replicas decide
running and success, the master role, the cluster spec) comes from `taas_operator.tfjob`, which
this package imports: it plans TFJobs, not any job kind (no seam like Kueue's `GenericJob`).
Every input is an argument: the operator's settings reach it as plain `BuildOptions`.

Public surface:
    plan_job(job, pods, now, *, services=None, options=None) -> Plan     (lifecycle.py)
    Plan, Event, status_changed(old, new), counts_only_change(old, new),
    skip_reason(managed_by, ...)                                         (plan.py)
    ObservedPod (ObservedPod.from_manifest(pod_dict))                    (observed.py)
    BuildOptions(cluster_domain="", hosts=None, gang_scheduler="", gang_pod_scheduler=...,
                 node_lost_toleration_seconds=0)
    desired_pod_group(job, options), gang_waiting(job, pods, options), min_member(job)
                                                                          (gang.py)
    Kueue's pod groups: pod_group, join, to_release, to_close, ...        (kueue.py)
    desired_pod(s), desired_service(s), desired_network_policy, owner_reference,
    replica_labels, job_selector                                          (objects.py)
    node_lost_tolerations(tolerations, seconds): a lost node's default    (tolerations.py)
    set_condition, fail_invalid_spec, fail_job                            (conditions.py)
    backoff_delay(attempt, start, cap)                                    (backoff.py)
    the scale subresource's Worker count: note_worker_scale, held_scale,
    worker_selector                                                        (scaling.py)
    fold_progress, chief_slot, chief_pod, final_report, progress_port,
    progress_columns,
    format_eta                                                            (progress.py)
"""

from taas_operator.planner.backoff import backoff_delay
from taas_operator.planner.conditions import fail_invalid_spec, fail_job, set_condition
from taas_operator.planner.gang import desired_pod_group, gang_waiting, min_member
from taas_operator.planner.lifecycle import plan_job
from taas_operator.planner.objects import (
    BuildOptions,
    desired_network_policy,
    desired_pod,
    desired_pods,
    desired_service,
    desired_services,
    job_selector,
    made_by_token,
    owner_reference,
    replica_labels,
)
from taas_operator.planner.observed import ObservedPod
from taas_operator.planner.plan import (
    Event,
    Plan,
    counts_only_change,
    skip_reason,
    status_changed,
)
from taas_operator.planner.progress import (
    chief_pod,
    chief_slot,
    final_report,
    fold_progress,
    format_eta,
    progress_columns,
    progress_port,
)

__all__ = [
    "BuildOptions",
    "Event",
    "ObservedPod",
    "Plan",
    "backoff_delay",
    "chief_pod",
    "chief_slot",
    "counts_only_change",
    "desired_network_policy",
    "desired_pod",
    "desired_pod_group",
    "desired_pods",
    "desired_service",
    "desired_services",
    "fail_invalid_spec",
    "fail_job",
    "final_report",
    "fold_progress",
    "format_eta",
    "gang_waiting",
    "job_selector",
    "made_by_token",
    "min_member",
    "owner_reference",
    "plan_job",
    "progress_columns",
    "progress_port",
    "replica_labels",
    "set_condition",
    "skip_reason",
    "status_changed",
]
