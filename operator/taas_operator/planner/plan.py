"""What the planner returns, and how an executor carries it out.

    Plan, Event                                   # pydantic models
    status_changed(old, new) -> bool
    counts_only_change(old, new) -> int | None    # replicas recounted, when nothing else changed
    skip_reason(managed_by, deletion_timestamp) -> str | None

`skip_reason` is the one check of whether a job is left alone: `spec.runPolicy.managedBy` names
another controller, or the job is being deleted. the planner applies it to every job it plans;
the operator applies it to a stored job before parsing it, so that another controller's job (or
one on its way out) is never rejected for a spec TaaS would refuse.

How to carry out a Plan (the operator and `taas run` alike):
1. if `plan.skipped`: do nothing (`skip_reason` said why);
2. if `plan.status_changed`: write `plan.status` (status subresource) FIRST, so a crash before
   the pod work cannot lose a counted recreation (counting is idempotent per pod uid);
3. delete `plan.delete_pods` and `plan.delete_services` (names; `plan.force_delete_pods` with
   grace period 0), create `plan.create_pods` and
   `plan.create_services` (manifests; treat AlreadyExists as success), remove Kueue's finalizer
   from `plan.release_pods` and mark `plan.close_pods` not retriable (`planner.kueue`; both only
   ever name pods of a Kueue pod group), concurrently;
4. emit `plan.events` on the TFJob;
5. if `plan.delete_job`: delete the TFJob (its TTL has passed);
6. if `plan.requeue_at`: plan again at that time (activeDeadlineSeconds, TTL), on time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from taas_operator.api.constants import OWN_MANAGERS
from taas_operator.api.models import TFJobStatus
from taas_operator.api.text import bounded

EventType = Literal["Normal", "Warning"]


class Event(BaseModel):
    """A Kubernetes event to record on the TFJob; its message kept to `api.text.MESSAGE_LIMIT`
    characters (pod text in it is unbounded)."""

    type: EventType
    reason: str
    message: str

    @field_validator("message")
    @classmethod
    def _bounded(cls, message: str) -> str:
        return bounded(message)


class Plan(BaseModel):
    """What to do now to move the job toward its desired state."""

    status: TFJobStatus
    status_changed: bool = False
    create_pods: list[dict[str, Any]] = Field(default_factory=list)
    delete_pods: list[str] = Field(default_factory=list)
    #: TaaS: pods to delete at once (grace period 0): evicted from a lost node, past their grace.
    force_delete_pods: list[str] = Field(default_factory=list)
    create_services: list[dict[str, Any]] = Field(default_factory=list)
    delete_services: list[str] = Field(default_factory=list)
    #: TaaS: pods whose Kueue finalizer to remove: ended, and replaced by TaaS (`planner.kueue`).
    release_pods: list[str] = Field(default_factory=list)
    #: TaaS: pods to mark `kueue.x-k8s.io/retriable-in-group: "false"`: their group's run ended.
    close_pods: list[str] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    delete_job: bool = False
    requeue_at: datetime | None = None
    skipped: str | None = None


def status_changed(old: TFJobStatus, new: TFJobStatus) -> bool:
    """Whether writing `new` would change the stored status."""
    return old.to_dict() != new.to_dict()


def counts_only_change(old: TFJobStatus, new: TFJobStatus) -> int | None:
    """When `new` differs from `old` only in replicaStatuses (active, succeeded, failed
    counts), by how many replica moves (the sum of the counts' differences); else None.
    The operator writes such changes less eagerly than transitions (`reconcile.status`)."""
    before, after = old.to_dict(), new.to_dict()
    old_counts = before.pop("replicaStatuses", None) or {}
    new_counts = after.pop("replicaStatuses", None) or {}
    if before != after:
        return None
    counted = ("active", "succeeded", "failed")
    moved = 0
    for rtype in set(old_counts) | set(new_counts):
        a, b = old_counts.get(rtype) or {}, new_counts.get(rtype) or {}
        if {k: v for k, v in a.items() if k not in counted} != {
            k: v for k, v in b.items() if k not in counted
        }:
            return None  # something beside the counts (a selector, say) changed
        moved += sum(abs(int(b.get(k, 0)) - int(a.get(k, 0))) for k in counted)
    return moved


def skip_reason(managed_by: str | None, deletion_timestamp: str | None) -> str | None:
    """Why the job is left alone (another controller manages it, or it is being deleted)."""
    if (managed_by or "") not in OWN_MANAGERS:
        return f"spec.runPolicy.managedBy is {managed_by!r}"
    if deletion_timestamp:
        return "the TFJob is being deleted"
    return None
