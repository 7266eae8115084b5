"""A TFJob admitted whole by Kueue's plain `pod` integration (`--kueue-pod-groups`). Pure.

    pod_group(job, start_time, options) -> KueueGroup | None   # None: not in a group
    group_name(job, start_time) -> str
    join(pod_manifest, group)                                  # labels + annotation, in place
    to_release(pods) -> list[str]       # pods whose Kueue finalizer TaaS removes, and why below
    to_close(pods) -> list[str]         # pods TaaS marks `retriable-in-group: "false"`
    waiting_for_admission(job, pods, group, creating) -> str | None   # condition messages
    stopped_by_kueue(job, pods) -> str | None
    admitted(job, pods, group, running_reason) -> str | None

Why: Kueue's `kubeflow.org/tfjob` integration is off by default from v0.19 and its removal is
tracked (kueue#12620); its `pod` integration needs nothing of the TFJob. With the setting on,
every pod of a TFJob labelled `kueue.x-k8s.io/queue-name` gets, at creation, that label, the
label `kueue.x-k8s.io/pod-group-name` (one name per run of the job, below) and the annotation
`kueue.x-k8s.io/pod-group-total-count` (every replica of the job), and the TFJob's
`kueue.x-k8s.io/priority-class` label if it has one. Kueue's webhook gates each pod (scheduling
gate, finalizer); once the whole group exists, Kueue admits it whole within the quota and
removes the gates. One PodSet per pod shape (requests, ports: a replica type, usually).

What Kueue's pod groups expect, and what TaaS does (Kueue's KEP-976, v0.19.2's pod controller):
- **A replaced pod.** Kueue never recreates a failed pod; a replacement of any name in the same
  group takes its place, and Kueue removes the failed pod's finalizer only once that
  replacement exists. TaaS names pods `<job>-<type>-<index>` (Kubeflow's names, the cluster
  spec's hosts), so the replacement cannot exist while the old pod does: TaaS removes Kueue's
  finalizer itself from a pod it replaces, once the pod has ended (Failed/Succeeded) or TaaS
  force-deletes it (lost node), never from a pod still running. Kueue then counts one pod
  missing (`WaitingForReplacementPods`, the quota kept while admitted); the replacement joins
  the same group at creation, gated, and Kueue ungates it at once since the group is admitted.
- **Preemption / eviction.** Kueue sets the `TerminationTarget` condition on every pod of the
  group and deletes them; the group's Workload goes back to its queue. TaaS does not count
  those ends as failures (whatever the restart policy); once each has ended it is released as
  above and made again; the new pods wait gated until Kueue admits the group again. The job
  says `EvictedByKueue` (Running False), then `WaitingForAdmission` until admitted.
- **The end of a run.** When the job finishes (Succeeded or Failed), is suspended
  (`runPolicy.suspend`), or was deleted, TaaS marks the pods that are left
  `kueue.x-k8s.io/retriable-in-group: "false"`: Kueue then ends the group once none of its pods
  runs or waits, releases the quota and the pods' finalizers. (All pods Succeeded ends it
  anyway.)
- **One group per run.** The group's name is `<job>-<8 hex of sha256(uid, startTime)>`: a
  resumed job (a new startTime) forms a new group, since the old one ended with the
  suspension and Kueue never admits an ended group again; the replacements of one run share
  its name. A job whose replicas change while it runs is outside what pod groups support (the
  total count is fixed at creation); Kueue reports it on the Workload.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from taas_operator.api.constants import (
    KUEUE_GROUP_LABEL,
    KUEUE_PRIORITY_LABEL,
    KUEUE_QUEUE_LABEL,
    KUEUE_TOTAL_COUNT_ANNOTATION,
    REASON_EVICTED_BY_KUEUE,
    REASON_WAITING_FOR_ADMISSION,
)
from taas_operator.api.models import TFJob
from taas_operator.planner.gang import total_replicas
from taas_operator.planner.observed import ObservedPod

_KUEUE_WAITS = (REASON_WAITING_FOR_ADMISSION, REASON_EVICTED_BY_KUEUE)
#: A label value: at most 63 characters; 54 of the job's name, a dash and 8 hex digits.
_NAME_ROOM = 63 - 9


class KueueGroup(BaseModel):
    """The pod group one run of a TFJob forms for Kueue."""

    queue: str
    name: str
    total: int
    priority_class: str | None = None


def group_name(job: TFJob, start_time: datetime | None) -> str:
    """`<job>-<8 hex>`: one name per incarnation (uid) and run (startTime) of the job."""
    stamp = start_time.isoformat() if start_time else ""
    digest = hashlib.sha256(f"{job.metadata.uid or ''}/{stamp}".encode()).hexdigest()[:8]
    return f"{job.name[:_NAME_ROOM].rstrip('-.')}-{digest}"


def pod_group(job: TFJob, start_time: datetime | None, enabled: bool) -> KueueGroup | None:
    """The group of this run, when pod groups are on and the job names a Kueue queue."""
    queue = job.metadata.labels.get(KUEUE_QUEUE_LABEL)
    if not enabled or not queue:
        return None
    return KueueGroup(
        queue=queue,
        name=group_name(job, start_time),
        total=total_replicas(job),
        priority_class=job.metadata.labels.get(KUEUE_PRIORITY_LABEL),
    )


def join(pod: dict[str, Any], group: KueueGroup) -> None:
    """Put Kueue's pod-group labels and annotation on a pod manifest (at creation)."""
    meta = pod["metadata"]
    labels = meta.setdefault("labels", {})
    labels[KUEUE_QUEUE_LABEL] = group.queue
    labels[KUEUE_GROUP_LABEL] = group.name
    if group.priority_class:
        labels[KUEUE_PRIORITY_LABEL] = group.priority_class
    meta.setdefault("annotations", {})[KUEUE_TOTAL_COUNT_ANNOTATION] = str(group.total)


def ended(pod: ObservedPod) -> bool:
    return pod.phase in ("Succeeded", "Failed")


def to_release(pods: Sequence[ObservedPod]) -> list[str]:
    """Pods being deleted that have ended and still carry Kueue's finalizer: TaaS replaces
    them, which the finalizer would otherwise block (same name)."""
    return [p.name for p in pods if p.kueue_finalizer and p.deleting and ended(p)]


def to_close(pods: Sequence[ObservedPod]) -> list[str]:
    """Pods of a Kueue group not yet marked `retriable-in-group: "false"`."""
    return [p.name for p in pods if p.kueue_group and p.kueue_finalizer and not p.kueue_closed]


def waiting_for_admission(
    job: TFJob, pods: Sequence[ObservedPod], group: KueueGroup | None, creating: bool
) -> str | None:
    """While live pods wait behind Kueue's gate, or pods of the group are being made (Kueue's
    webhook gates them as they are created): what the job waits for, and where to look."""
    gated = [p for p in pods if p.active and p.kueue_gated]
    if group is None or not (gated or creating):
        return None
    return (
        f"TFJob {job.namespace}/{job.name} is waiting for Kueue to admit its {group.total} pods "
        f"as one group (LocalQueue {group.queue}); `kubectl describe workload -n "
        f"{job.namespace} {group.name}` says why it waits."
    )


def admitted(
    job: TFJob, pods: Sequence[ObservedPod], group: KueueGroup | None, running_reason: str | None
) -> str | None:
    """Once every live pod of the group is past Kueue's gate, after the job said it waited or
    was stopped: the admission, so the waiting message does not outlive it."""
    if group is None or running_reason not in _KUEUE_WAITS:
        return None
    members = [p for p in pods if p.active and p.kueue_group == group.name]
    if not members or any(p.kueue_gated or not p.kueue_finalizer for p in members):
        return None  # still waiting, or not Kueue's (a namespace Kueue does not manage)
    return (
        f"TFJob {job.namespace}/{job.name} was admitted by Kueue (pod group {group.name}); its "
        "pods are being placed."
    )


def stopped_by_kueue(job: TFJob, pods: Sequence[ObservedPod]) -> str | None:
    """When Kueue stopped pods of the job (preemption, eviction): what happened, and what next."""
    stopped = [p for p in pods if p.kueue_stopped and p.deleting]
    if not stopped:
        return None
    return (
        f"TFJob {job.namespace}/{job.name} was stopped by Kueue ({stopped[0].kueue_stopped}); "
        f"its {len(stopped)} pod(s) are made again once they end and wait for Kueue to admit "
        "the group again."
    )
