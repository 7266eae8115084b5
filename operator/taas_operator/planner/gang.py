"""Gang scheduling of a TFJob with scheduler-plugins' coscheduling: its PodGroup, and what the
job says while its gang waits. Pure: no I/O.

    desired_pod_group(job, options) -> dict | None     # None: gang scheduling is off
    min_member(job) -> int                             # schedulingPolicy.minAvailable, or all
    min_resources(job, members) -> dict[str, str]      # the first `members` pods' requests
    gang_waiting(job, pods, options) -> str | None     # "waiting for N pods to be scheduled
                                                       #  together: <the scheduler's message>"

As Kubeflow's training-operator does with `--gang-scheduler-name=scheduler-plugins`: one
`scheduling.x-k8s.io/v1alpha1` PodGroup named like the job, controlled by it (deleted with it),
with `minMember` = `runPolicy.schedulingPolicy.minAvailable` (default: every replica),
`minResources` = `schedulingPolicy.minResources`, else the requests (a container without requests:
its limits) of the first `minMember` pods in replica type order, and `scheduleTimeoutSeconds`.
Coscheduling's PodGroup has no queue or priority class: Kubeflow passes `queue` and
`priorityClass` only to Volcano, and TaaS, like it, leaves them out here (a queue is Kueue's
business; the pods' own `priorityClassName` orders gangs in coscheduling's queue).
Kubeflow orders replicas by their templates' PriorityClass values for `minResources` (reading
PriorityClasses, I/O); TaaS uses the replica type order (`TFJob.replica_types`), which is the
same whenever `minAvailable` is unset or no template names a priority class.
Pods join with the label `scheduling.x-k8s.io/pod-group: <job>` and the gang scheduler's
`schedulerName` unless their template names a scheduler of its own (`objects.desired_pod`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from taas_operator.api.constants import GANG_SCHEDULER_PLUGINS, POD_GROUP_API_VERSION
from taas_operator.api.models import TFJob
from taas_operator.api.quantity import parse_quantity
from taas_operator.planner.objects import BuildOptions, job_selector, owner_reference
from taas_operator.planner.observed import ObservedPod


def total_replicas(job: TFJob) -> int:
    """Pods of the job when every replica runs."""
    return sum(job.spec.tf_replica_specs[t].replicas for t in job.replica_types())


def min_member(job: TFJob) -> int:
    """How many pods must be placed together: schedulingPolicy.minAvailable, else every one."""
    policy = job.spec.run_policy.scheduling_policy
    if policy is not None and policy.min_available is not None:
        return policy.min_available
    return total_replicas(job)


def _format(value: Decimal) -> str:
    """A quantity the apiserver reads: whole units, else milli-units, else a decimal."""
    if value == value.to_integral_value():
        return str(int(value))
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return format(value.normalize(), "f")


def _pod_requests(template: Mapping[str, Any]) -> dict[str, Decimal]:
    """Each container's requests (where it has none: its limits), summed, as Kubeflow does."""
    found: dict[str, Decimal] = {}
    for container in (template.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = resources.get("requests") or resources.get("limits") or {}
        for name, value in asked.items():
            amount = parse_quantity(value)
            if amount is not None:
                found[name] = found.get(name, Decimal(0)) + amount
    return found


def min_resources(job: TFJob, members: int) -> dict[str, str]:
    """The requests of the first `members` pods, in replica type order (Kubeflow's sum)."""
    total: dict[str, Decimal] = {}
    left = members
    for rtype in job.replica_types():
        spec = job.spec.tf_replica_specs[rtype]
        count = min(spec.replicas, left)
        left -= count
        for name, amount in _pod_requests(spec.template).items():
            total[name] = total.get(name, Decimal(0)) + amount * count
    return {name: _format(value) for name, value in sorted(total.items())}


def desired_pod_group(job: TFJob, options: BuildOptions | None = None) -> dict[str, Any] | None:
    """The job's PodGroup; None when gang scheduling is off (`options.gang_scheduler` empty)."""
    options = options or BuildOptions()
    if options.gang_scheduler != GANG_SCHEDULER_PLUGINS:
        return None
    policy = job.spec.run_policy.scheduling_policy
    members = min_member(job)
    if policy is not None and policy.min_resources is not None:
        resources = {k: str(v) for k, v in sorted(policy.min_resources.items())}
    else:
        resources = min_resources(job, members)
    spec: dict[str, Any] = {"minMember": members}
    if resources:
        spec["minResources"] = resources
    if policy is not None and policy.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    metadata: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "labels": job_selector(job.name),
    }
    if job.metadata.uid:
        metadata["ownerReferences"] = [owner_reference(job)]
    return {
        "apiVersion": POD_GROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def _gang_scheduled(job: TFJob, options: BuildOptions) -> bool:
    """Whether every replica goes to the gang scheduler (a template may name another one)."""
    return all(
        (spec.template.get("spec") or {}).get("schedulerName", options.gang_pod_scheduler)
        in ("", options.gang_pod_scheduler)
        for spec in job.spec.tf_replica_specs.values()
    )


def gang_waiting(
    job: TFJob, pods: Sequence[ObservedPod], options: BuildOptions | None = None
) -> str | None:
    """While the gang scheduler reports pods of the job unschedulable (PodScheduled=False,
    reason Unschedulable) and fewer than the gang's size run: "waiting for N pods to be scheduled
    together: <its message>", N the gang's size. None when gang scheduling is off, a template
    sends its pods to another scheduler (no gang then: each pod is placed alone), or no gang
    waits."""
    options = options or BuildOptions()
    if options.gang_scheduler != GANG_SCHEDULER_PLUGINS or not _gang_scheduled(job, options):
        return None
    waiting = [p for p in pods if p.unschedulable is not None and not p.deleting]
    members = min_member(job)
    running = sum(1 for p in pods if p.phase == "Running" and not p.deleting)
    if not waiting or running >= members:  # no gang waits (minAvailable below the replicas)
        return None
    said = next((p.unschedulable for p in waiting if p.unschedulable), "")
    message = f"waiting for {members} pods to be scheduled together"
    return f"{message}: {said}" if said else message
