"""One pass over one TFJob: read what exists, ask the planner for a Plan, carry it out.

    passes = Reconciler(settings, kube, cache, children, expectations, request, forget)
    await passes.run(key) -> datetime | None      # when to run again (None: on the next event)
    passes.cost(key) -> float                     # seconds the last pass spent computing
    passes.forget(key)                            # the job is gone: drop what a pass kept

A pass (level-triggered, idempotent; the rules are `taas_operator.planner.lifecycle`'s):
1. the TFJob from the cache the watch keeps (`JobCache`; one GET only when it is missing);
   `planner.skip_reason` (managedBy another controller, or being deleted) -> nothing;
2. a spec the models refuse (stored while an older CRD was installed) -> condition Failed with
   the field and fix and a Warning event `InvalidTFJobSpec`, once (`planner.fail_invalid_spec`);
   never a retry loop. The same for a pod template the apiserver refuses (`actions`), and,
   with reason `ObjectNotOwned`, for a name the job needs held by an object no TFJob of the
   name controls (`owned.NotOwned`: the object is left alone, the message names it and the fix);
3. pods, services (and NetworkPolicies) from the watch cache (`children.ChildCache`, which says
   why it can be trusted); LISTed fresh by the job's labels instead while some of the job's own
   creations are not in the watch yet, or when a creation found a name taken that the cache
   did not show. Only objects this incarnation of the job controls are its children;
4. `planner.plan_job` -> Plan; the status written FIRST (`status.StatusWriter`: a Conflict
   reads the job again and repeats the pass; a change of the replica counts alone may be held a
   few seconds, `StatusWriter.hold_until`), then deletions and creations concurrently
   (`actions.Actions`; none while the namespace has its limit of jobs being created:
   `creating.CreationSlots`), then the pass's events (`recorder.pass_events`: one Normal event
   naming what it did, Warnings apart), then the TTL deletion;
5. the plan's `requeue_at` (or the end of a held status write, if sooner) is returned, so the
   work queue wakes the job exactly then.
Failed API calls become Warning events (once per distinct error) and a `PassError`, so the
work queue retries with backoff; 403s name the missing verb and resource. Anything else a pass
raises (an operator bug, a number no check bounded) fails that job with reason
`ReconcileFailed`, the error named in its condition and a Warning event, and is not retried:
it would fail the same way on every pass, unseen.

Deliberately no finalizer: deleting a TFJob never waits for the operator; its pods, services and
NetworkPolicy carry a controller ownerReference, so Kubernetes' garbage collector removes them
(the Controller deletes them itself at once when the TFJob went without finalizers, so that
its pods stop when asked: `triggers.Controller._delete_children`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from taas_operator.api import TFJobStatus, TFJobValidationError, parse_tfjob
from taas_operator.api.constants import (
    REASON_INVALID_SPEC,
    REASON_NOT_OWNED,
    REASON_PASS_FAILED,
    REASON_TOO_LARGE,
)
from taas_operator.api.models import TFJob
from taas_operator.api.resources import POD, POLICY, SERVICE, Kind
from taas_operator.apiserver.errors import ApiError
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller import metrics
from taas_operator.controller.reconcile.actions import Actions
from taas_operator.controller.reconcile.creating import CreationSlots
from taas_operator.controller.reconcile.owned import NotOwned
from taas_operator.controller.reconcile.progress_poller import ProgressPoller
from taas_operator.controller.reconcile.recorder import (
    EventRecorder,
    pass_events,
    waiting_for_names,
)
from taas_operator.controller.reconcile.scaleguard import ScaleGuard
from taas_operator.controller.reconcile.status import StatusWriter
from taas_operator.controller.reconcile.tensorboard import TensorBoards
from taas_operator.controller.seen import ADOPTION
from taas_operator.controller.watch.children import ChildCache, Children, children_from
from taas_operator.controller.watch.expectations import Expectations
from taas_operator.controller.watch.jobcache import JobCache, JobKey
from taas_operator.planner import (
    BuildOptions,
    Event,
    fail_invalid_spec,
    fail_job,
    job_selector,
    plan_job,
    skip_reason,
)
from taas_operator.planner.batches import list_page
from taas_operator.planner.budget import over_budget
from taas_operator.planner.kueue import to_close
from taas_operator.planner.scaling import REASON_SCALE_REFUSED
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")


class PassError(RuntimeError):
    """Some API calls of a pass failed; the work queue retries the job later."""


_CHILD_PLURALS = (POD.plural, SERVICE.plural, POLICY.plural)
#: Objects named in an ObjectNotOwned condition (the rest are counted).
_NAMED_OBJECTS = 3
#: What a pass may raise that another try can cure: the work queue retries these.
_RETRIED = (PassError, ApiError, OSError, TimeoutError)
#: Characters of an unexpected error's text kept in the job's condition.
_ERROR_TEXT = 300


class Reconciler:
    """Runs passes; keeps what one pass leaves for the next (which jobs must list)."""

    def __init__(
        self,
        settings: OperatorSettings,
        kube: KubeClient,
        cache: JobCache,
        children: ChildCache,
        expectations: Expectations,
        request: Callable[[JobKey], None],
        forget: Callable[[JobKey], None],
    ) -> None:
        self.kube, self.cache, self.expectations, self.request = kube, cache, expectations, request
        self.children = children
        self.network_policy = settings.network_policy
        self.max_job_bytes = settings.max_job_bytes
        self.options = BuildOptions(
            cluster_domain=settings.cluster_domain,
            gang_scheduler=settings.gang_scheduler_name,
            gang_pod_scheduler=settings.gang_pod_scheduler_name,
            kueue_pod_groups=settings.kueue_pod_groups,
            adoption_key=ADOPTION.key,
            node_lost_toleration_seconds=settings.node_lost_toleration_seconds,
        )
        self.recorder = EventRecorder(kube)
        self.writer = StatusWriter(kube, cache, expectations, request, forget)
        self.actions = Actions(
            kube,
            expectations,
            request,
            network_policy=settings.network_policy,
            extra_namespaces=settings.network_policy_extra_namespaces,
            progress_namespace=settings.progress_namespace,
            options=self.options,
        )
        self.progress = ProgressPoller(settings, request)
        self.creating = CreationSlots(settings.creating_per_namespace, request)
        self.tensorboards = TensorBoards(
            kube,
            settings.tensorboard_image,
            policy=settings.network_policy,
            allow_from=settings.tensorboard_allow_from,
        )
        self._forget_job = forget
        self._must_list: set[JobKey] = set()  # jobs whose next pass must LIST their children
        self._costs: dict[JobKey, float] = {}  # seconds the last pass computed (no waiting)
        self._sized: dict[JobKey, tuple[str, int | None]] = {}  # (uid, generation) within budget
        self.scale_guard = ScaleGuard(self.max_job_bytes, self.options)

    def forget(self, key: JobKey) -> None:
        """Drop what passes kept about the job (the caller forgets its cache and expectations)."""
        self._must_list.discard(key)
        self._costs.pop(key, None)
        self._sized.pop(key, None)
        self.scale_guard.forget(key)
        self.recorder.clear(key)
        self.writer.forget_job(key)
        self.actions.forget(key)
        self.progress.forget(key)
        self.tensorboards.forget(key)
        self.creating.forget(key)

    def cost(self, key: JobKey) -> float:
        """Seconds the job's last pass spent reading the job and planning (its waits for the
        apiserver left out): what the work queue's cool-down is measured in."""
        return self._costs.get(key, 0.0)

    async def run(self, key: JobKey) -> datetime | None:
        """Run one pass for the job; return when it must run again (None: on the next event)."""
        logger.debug("reconciling %s/%s", *key)  # tests and users grep for this line
        ADOPTION.activate()  # pods made before this process's first pass are trusted
        self._costs[key] = 0.0
        body = self.cache.get(key)
        if body is None:
            body = await self.kube.get_job(*key)
            if body is None:
                await self._close_groups(key, "")  # its pods, on their way out with it
                return None
            self.cache.remember(body)
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        managed_by = (spec.get("runPolicy") or {}).get("managedBy")
        skipped = skip_reason(managed_by, meta.get("deletionTimestamp"))
        if skipped:
            logger.debug("%s/%s: %s, left alone", *key, skipped)
            return None
        started = time.perf_counter()
        try:
            job = parse_tfjob(self.writer.restore(key, body))
        except TFJobValidationError as err:
            await self._reject(key, body, "; ".join(str(e) for e in err.errors))
            return None
        self._costs[key] = time.perf_counter() - started
        try:
            return await self._run_job(key, body, job)
        except _RETRIED:
            raise
        except Exception as err:  # reported on the job itself
            logger.exception("%s/%s: pass failed", *key)
            text = f"{type(err).__name__}: {err}"[:_ERROR_TEXT]
            message = (
                f"TFJob {key[0]}/{key[1]}: the operator's pass over it failed ({text}); it is "
                "not retried; fix: check the spec's values, then delete and recreate the TFJob "
                "(if the spec is sound, this is an operator bug: report it with this message)"
            )
            await self._fail(key, self.cache.get(key) or body, REASON_PASS_FAILED, message)
            return None

    async def _run_job(self, key: JobKey, body: dict[str, Any], job: TFJob) -> datetime | None:
        uid = job.metadata.uid or ""
        await self._close_groups(key, uid)
        # The watch cache, unless this job's own writes are not all in it yet, or a creation
        # found a name taken that the cache did not show: then a fresh LIST.
        fresh = key in self._must_list or self.expectations.pending(key, _CHILD_PLURALS)
        listed = await self._list_children(job) if fresh else None
        started = time.perf_counter()
        children = listed if listed is not None else self.children.of(*key, uid)
        self.expectations.forget(key)
        self._must_list.discard(key)
        if not children.pods and not job.status.finished and await self._too_large(key, body, job):
            return None
        job, refused = self.scale_guard.held(key, job)
        now = datetime.now(UTC)
        plan = plan_job(job, children.pods, now, services=children.services, options=self.options)
        if plan.skipped:
            return None
        self.progress.fold(key, job, children.pods, plan, now)
        self.creating.gate(key, job, plan, now)  # its namespace's creation limit
        self._costs[key] = self._costs.get(key, 0.0) + time.perf_counter() - started
        held = None
        if plan.status_changed:
            replicas = sum(spec.replicas for spec in job.spec.tf_replica_specs.values())
            held = self.writer.hold_until(key, job.status, plan.status, replicas, now)
            if held is not None:
                logger.debug("%s/%s: replica counts held until %s", *key, held.isoformat())
        if plan.status_changed and held is None:
            written = plan.status.to_dict()
            stored = await self.writer.write(key, body, written, job.status.to_dict())
            if stored is None:
                return None
            body = stored
        applied = await self.actions.apply(job, plan, children)
        metrics.pods_created(job, plan, bool(applied.errors))
        self.creating.after(key, plan, now, failed=bool(applied.errors) and not applied.invalid)
        events = pass_events(applied.done, applied.problems, plan.events)
        not_owned = applied.not_owned
        if not plan.delete_job:
            board_events, board_taken = await self.tensorboards.sync(job)
            events += board_events
            not_owned = not_owned + board_taken
        # Names still another incarnation's: as listed, or as the watch shows that earlier
        # job's pods (a LIST a moment later may find them gone; the wait still happened).
        taken = applied.taken_pods
        if taken and not fresh:
            earlier = {pod.name for pod in self.children.others(*key, uid)}
            taken = [name for name in taken if name in earlier]
        if taken:
            events.append(waiting_for_names(taken))
        if refused:
            events.append(Event(type="Warning", reason=REASON_SCALE_REFUSED, message=refused))
        await self.recorder.post(key, body, events)
        if applied.name_taken and not fresh:  # look at what is there
            self._must_list.add(key)
            self.request(key)
        if applied.invalid:  # a permanent error: retrying would fail the same way forever
            await self._reject(key, self.cache.get(key) or body, "; ".join(applied.invalid))
            return None
        # as permanent as an invalid spec, until someone renames the job or the object
        if not_owned and await self._not_owned(key, self.cache.get(key) or body, not_owned):
            return None
        if plan.delete_job and not applied.errors:
            if await self.actions.delete_job(job, children):
                logger.info("%s/%s: deleted after ttlSecondsAfterFinished", *key)
                self._forget_job(key)
            return None
        if applied.errors:
            raise PassError(f"{job.namespace}/{job.name}: " + "; ".join(applied.errors))
        self.recorder.clear(key)
        return min((t for t in (plan.requeue_at, held) if t is not None), default=None)

    async def _close_groups(self, key: JobKey, uid: str) -> None:
        """Kueue pod groups of runs that are gone (a deleted job, an earlier job of the name):
        marked not retriable, so Kueue ends them and frees their quota (`planner.kueue`)."""
        names = to_close(self.children.others(*key, uid))
        if names:
            logger.info("%s/%s: ending Kueue pod groups of gone runs: %s", *key, names)
            found = (self.children.find(POD, key[0], name) for name in names)
            problems = await self.actions.close_groups([s for s in found if s is not None])
            if problems:
                raise PassError("; ".join(e.message for e in problems))

    async def _list_children(self, job: TFJob) -> Children:
        """The job's pods, services and NetworkPolicies (when managed), read fresh."""
        logger.debug("%s/%s: listing its children", job.namespace, job.name)
        kinds = [POD, SERVICE, POLICY] if self.network_policy else [POD, SERVICE]
        listed = Children()
        for part in await asyncio.gather(*(self._list_kind(job, kind) for kind in kinds)):
            _merge(listed, part)
        uid = job.metadata.uid or ""
        # pods lost with their node that are gone already: a LIST cannot show them
        names = {p.name for p in listed.pods}
        lost = self.children.lost(job.namespace, job.name, uid)
        listed.pods += [p for p in lost if p.name not in names]
        return listed

    async def _not_owned(self, key: JobKey, body: dict[str, Any], problems: list[NotOwned]) -> bool:
        """Names the job needs are held by objects it does not control: they are left alone,
        and the job fails naming them and the fix (`_fail`)."""
        named = list(dict.fromkeys(str(p) for p in problems))
        more = len(named) - _NAMED_OBJECTS
        detail = "; ".join(named[:_NAMED_OBJECTS]) + (f" (and {more} more)" if more > 0 else "")
        message = f"TFJob {key[0]}/{key[1]} cannot run under its name: {detail}"
        return await self._fail(key, body, REASON_NOT_OWNED, message)

    async def _too_large(self, key: JobKey, body: dict[str, Any], job: TFJob) -> bool:
        """Before any pod is made: a job whose pods and services would take more of etcd than
        --max-job-bytes fails (reason JobTooLarge, both sizes and the fix named). Checked once
        per spec generation; a job with pods already is not stopped by a limit lowered since."""
        version = (job.metadata.uid or "", job.metadata.generation)
        if self._sized.get(key) == version:
            return False
        refused = over_budget(job, self.max_job_bytes, self.options)
        if refused is None:
            self._sized[key] = version
            return False
        message = f"TFJob {key[0]}/{key[1]} is {refused}"
        await self._fail(key, body, REASON_TOO_LARGE, message)
        return True

    async def _fail(self, key: JobKey, body: dict[str, Any], reason: str, message: str) -> bool:
        """Failed condition + Warning event with `reason` and `message`, once; a job that had
        ended already gets the Warning alone (False: its pass goes on, to its clean-up and
        TTL)."""
        try:
            status = TFJobStatus.model_validate(body.get("status") or {})
        except ValueError:
            status = TFJobStatus()
        now = datetime.now(UTC).replace(microsecond=0)
        event = Event(type="Warning", reason=reason, message=message)
        if not fail_job(status, key[1], reason, message, now):
            ended = status.condition("Failed")
            if ended is None or ended.reason != reason:
                await self.recorder.post(key, body, [event])
            return False
        logger.warning("%s", message)
        stored = await self.writer.write(key, body, status.to_dict(), body.get("status"))
        if stored is not None:
            await self.recorder.post(key, stored, [event])
            self.request(key)  # the failed job's clean-up and TTL: its write starts no pass
        return True

    async def _list_kind(self, job: TFJob, kind: Kind) -> Children:
        """The job's children of one kind, a page at a time, each page kept as small entries
        before the next is read: a pod of a job of N replicas names N hosts (`planner.batches`)."""
        selector = ",".join(f"{k}={v}" for k, v in sorted(job_selector(job.name).items()))
        replicas = sum(spec.replicas for spec in job.spec.tf_replica_specs.values())
        found = Children()
        pages = self.kube.list_pages(kind, job.namespace, selector, list_page(replicas))
        async for items, _ in pages:
            part = children_from(
                items if kind is POD else (),
                items if kind is SERVICE else (),
                items if kind is POLICY else (),
                job.metadata.uid or "",
                job.namespace,
            )
            _merge(found, part)
        return found

    async def _reject(self, key: JobKey, body: dict[str, Any], problem: str) -> None:
        """A spec the models or the apiserver refuse: Failed condition + Warning event, once."""
        try:
            status = TFJobStatus.model_validate(body.get("status") or {})
        except ValueError:
            status = TFJobStatus()
        now = datetime.now(UTC).replace(microsecond=0)
        message = fail_invalid_spec(status, key[0], key[1], problem, now)
        if message is None:
            return
        logger.warning("%s", message)
        stored = await self.writer.write(key, body, status.to_dict(), body.get("status"))
        if stored is not None:
            event = Event(type="Warning", reason=REASON_INVALID_SPEC, message=message)
            await self.recorder.post(key, stored, [event])


def _merge(into: Children, part: Children) -> None:
    into.pods += part.pods
    into.services += part.services
    into.policies.update(part.policies)
