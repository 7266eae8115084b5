"""A bound on the TFJobs of one namespace being created at once (`--creating-per-namespace`).

    slots = CreationSlots(limit, request)   # request(key): a pass over that job soon
    slots.gate(key, job, plan, now) -> bool  # before the pass writes: False, the job waits
                                             # (its plan changed in place: no creations, and
                                             # condition Running False NamespaceCreationLimit)
    slots.after(key, plan, now, failed)      # after its creations: all made -> slot freed
    slots.forget(key)                        # the job is gone

A job is being created from the first pass whose plan creates pods until a pass ends whose
creations all succeeded and that asks for no next batch at once (`planner.batches`): a job of
one replica for one pass, a job of 5,000 for its batches, a job whose pods a quota refuses until
they are made. While `limit` jobs of a namespace are being created, its next job makes nothing;
it gets the condition "waiting: namespace X has N jobs being created" and a Normal event of the
same reason and message (each once), and a pass when a slot frees, first come first served. The
work queue's turns between namespaces (`workqueue`) bound how long one namespace's burst delays
another's passes; this bounds how many of one namespace's jobs hold pods half made, and retry,
at once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from taas_operator.api.constants import COND_RUNNING, REASON_NAMESPACE_CREATION_LIMIT
from taas_operator.api.models import TFJob
from taas_operator.controller import metrics
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner import Event, Plan, set_condition, status_changed


def waiting_message(namespace: str, creating: int, limit: int) -> str:
    """The condition's message on a job held by the limit."""
    return (
        f"waiting: namespace {namespace} has {creating} jobs being created (limit {limit}, "
        "--creating-per-namespace); this job's pods are made when one of them is"
    )


class CreationSlots:
    """Which jobs of each namespace are being created, and which wait for a slot."""

    def __init__(self, limit: int, request: Callable[[JobKey], None]) -> None:
        self.limit, self.request = limit, request
        self._creating: dict[str, set[JobKey]] = {}
        self._waiting: dict[str, dict[JobKey, None]] = {}  # ordered: first come first served

    def gate(self, key: JobKey, job: TFJob, plan: Plan, now: datetime) -> bool:
        """Whether the pass may carry out its creations; if not, `plan` is changed in place
        to make none and to say why on the job."""
        namespace = key[0]
        creating = self._creating.setdefault(namespace, set())
        if not plan.create_pods or key in creating or not self.limit:
            self._admitted(key, job, plan)
            return True
        if len(creating) < self.limit:
            creating.add(key)
            self._admitted(key, job, plan)
            return True
        self._waiting.setdefault(namespace, {})[key] = None
        plan.create_pods, plan.create_services = [], []
        if plan.requeue_at is not None and plan.requeue_at <= now:
            plan.requeue_at = None  # a next batch at once: not while it waits
        message = waiting_message(namespace, len(creating), self.limit)
        if set_condition(
            plan.status, COND_RUNNING, "False", REASON_NAMESPACE_CREATION_LIMIT, message, now
        ):
            plan.events.append(
                Event(type="Normal", reason=REASON_NAMESPACE_CREATION_LIMIT, message=message)
            )
        plan.status_changed = status_changed(job.status, plan.status)
        self._report(namespace)
        return False

    def after(self, key: JobKey, plan: Plan, now: datetime, failed: bool) -> None:
        """The pass's creations are done: a job whose pods are all made frees its slot."""
        more_at_once = plan.requeue_at is not None and plan.requeue_at <= now
        if not failed and not more_at_once:
            self._release(key)

    def forget(self, key: JobKey) -> None:
        self._waiting.get(key[0], {}).pop(key, None)
        self._release(key)

    def _admitted(self, key: JobKey, job: TFJob, plan: Plan) -> None:
        """The job no longer waits: its waiting condition (if any) is removed."""
        waiting = self._waiting.get(key[0])
        if waiting is not None and waiting.pop(key, False) is None:
            self._report(key[0])
        held = plan.status.condition(COND_RUNNING)
        if held is not None and held.reason == REASON_NAMESPACE_CREATION_LIMIT:
            plan.status.conditions = [c for c in plan.status.conditions if c is not held]
            plan.status_changed = status_changed(job.status, plan.status)

    def _release(self, key: JobKey) -> None:
        namespace = key[0]
        creating = self._creating.get(namespace)
        if creating is None or key not in creating:
            self._report(namespace)
            return
        creating.discard(key)
        waiting = self._waiting.get(namespace, {})
        free = self.limit - len(creating)
        for waiter in list(waiting)[: max(free, 0)]:
            del waiting[waiter]
            self.request(waiter)
        self._report(namespace)

    def _report(self, namespace: str) -> None:
        creating = self._creating.get(namespace, set())
        waiting = self._waiting.get(namespace, {})
        metrics.creation_slots(namespace, len(creating), len(waiting))
        if not creating:
            self._creating.pop(namespace, None)
        if not waiting:
            self._waiting.pop(namespace, None)
