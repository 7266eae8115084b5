"""A TFJob's PodGroup under gang scheduling (scheduler-plugins' coscheduling): made before its
pods, its spec put back, and written again when coscheduling would not look at the gang again.

    groups = PodGroups(kube, owned, options)
    await groups.sync(job) -> Done | Event | NotOwned | None   # before the pass's pods
    groups.follow(job, plan)          # the pass says the gang waits (or no longer does)
    groups.forget(key); await groups.close()

With gang scheduling on (`options.gang_scheduler`), the job's PodGroup (`planner.desired_pod_group`)
is made before its pods, and its spec put back when the job's wants change (minAvailable,
replicas, requests); finished jobs are left as they are (the PodGroup goes with the job). Not
watched: a pass sends nothing when the PodGroup it last made or checked for this incarnation of
the job already has the wanted spec (remembered per job), so a hand edit of a PodGroup stays
until the job changes or the operator restarts. A missing PodGroup CRD is a `FailedCreatePodGroup`
Warning naming the fix, and the pass is retried with backoff. A changed spec is followed, a
moment later, by one more write (the annotation `taas.dev/pod-group-spec-changed`): coscheduling
(scheduler-plugins v0.33) wakes a waiting gang on the PodGroup's update event but reads the
PodGroup through a second cache that can lag that event, and a gang judged by its old spec (say,
before its `minAvailable` was lowered) would otherwise wait for the scheduler's 5-minute flush
of unschedulable pods. Nor does coscheduling look again at a gang it held back when a node
becomes usable (uncordoned, added, freed): while a pass says the job waits for its gang (Running
False, WaitingForGang), its PodGroup is written again (the annotation `taas.dev/retry-gang`)
after GANG_RETRY_FIRST_SECONDS, then at doubling intervals up to GANG_RETRY_MAX_SECONDS, so the
gang is placed within about a minute of room appearing; one timer per waiting job, stopped
when a pass no longer says it waits or the job is gone. Every write is of the job's own
PodGroup, conditional on the uid read (`owned`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any

from taas_operator.api import constants as c
from taas_operator.api.models import TFJob, format_time
from taas_operator.api.resources import POD_GROUP
from taas_operator.apiserver.errors import ApiError, NotFound
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.reconcile.owned import NotOwned, Owned, holder
from taas_operator.controller.reconcile.recorder import (
    CREATE,
    UPDATE,
    Done,
    failed,
    log_api_error,
)
from taas_operator.controller.seen import Seen
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner import BuildOptions, Event, Plan, desired_pod_group

#: Seconds between a PodGroup's spec change and the write that wakes its gang again (above).
POD_GROUP_NUDGE_SECONDS = 2.0
#: Seconds a waiting gang's PodGroup is first written again after, and at most between two
#: such writes (the interval doubles; the module docstring says why).
GANG_RETRY_FIRST_SECONDS = 10.0
GANG_RETRY_MAX_SECONDS = 60.0


class PodGroups:
    """The PodGroups of the jobs: what was made, the writes still to come."""

    def __init__(self, kube: KubeClient, owned: Owned, options: BuildOptions) -> None:
        self.kube, self.owned, self.options = kube, owned, options
        #: job -> (uid, PodGroup spec) last made or found so (`sync`)
        self._made: dict[JobKey, tuple[str, dict[str, Any]]] = {}
        self._nudges: set[asyncio.Task[None]] = set()  # `_nudge`s not yet done
        #: job -> (uid, its `_retry_gang` timer) while a pass says its gang waits
        self._gang_retries: dict[JobKey, tuple[str, asyncio.Task[None]]] = {}

    async def close(self) -> None:
        """Stop the gangs' timers and the writes still to come."""
        tasks = [task for _, task in self._gang_retries.values()] + list(self._nudges)
        self._gang_retries.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def forget(self, key: JobKey) -> None:
        """The job is gone: drop what was remembered of its PodGroup, stop its gang's timer."""
        self._made.pop(key, None)
        self._stop_gang_retry(key)

    async def sync(self, job: TFJob) -> Done | Event | NotOwned | None:
        """Create the job's PodGroup, or put its spec back when it differs from the wanted one;
        nothing when gang scheduling is off or this pass's spec was already made or found."""
        desired = desired_pod_group(job, self.options)
        if desired is None:
            return None
        key, uid = (job.namespace, job.name), job.metadata.uid or ""
        if self._made.get(key) == (uid, desired["spec"]):
            return None
        try:
            made = await self.kube.create(POD_GROUP, job.namespace, desired)
            if made is not None:
                self._made[key] = (uid, desired["spec"])
                return Done(CREATE, POD_GROUP, job.name)
            current = await self.kube.get(POD_GROUP, job.namespace, job.name)
            if current is None:
                return None  # gone since: made on a later pass
            seen = Seen.read(POD_GROUP, current)
            whose = holder(seen, uid)
            if whose == "other":
                return NotOwned(seen)
            if whose == "earlier":
                return None  # an earlier job's, on its way out with it: made on a later pass
            if current.get("spec") != desired["spec"]:
                if not await self.owned.replace_spec(seen, uid, desired["spec"]):
                    return None  # gone or replaced since read: the next pass sees it
                self._made[key] = (uid, desired["spec"])
                self._later(self._nudge(seen, uid))
                return Done(UPDATE, POD_GROUP, job.name)
        except NotFound as err:  # no such resource: the CRD is not installed
            log_api_error(err)
            event = failed(CREATE, POD_GROUP, job.name, err)
            event.message += (
                "; install scheduler-plugins' PodGroup CRD (scheduling.x-k8s.io) or turn gang "
                "scheduling off (--gang-scheduler-name / gangScheduling.schedulerName)"
            )
            return event
        except ApiError as err:
            log_api_error(err)
            return failed(CREATE, POD_GROUP, job.name, err)
        self._made[key] = (uid, desired["spec"])
        return None

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` beside the passes (a reference is kept until it is done)."""
        task = asyncio.get_running_loop().create_task(work)
        self._nudges.add(task)
        task.add_done_callback(self._nudges.discard)

    def follow(self, job: TFJob, plan: Plan) -> None:
        """Start the job's `_retry_gang` timer when the pass says its gang waits (and none
        runs for this incarnation), stop it when the pass says otherwise."""
        key, uid = (job.namespace, job.name), job.metadata.uid or ""
        running = plan.status.condition(c.COND_RUNNING)
        waits = (
            running is not None
            and running.status == "False"
            and running.reason == c.REASON_WAITING_FOR_GANG
            and not plan.delete_job
            and not plan.status.finished
        )
        current = self._gang_retries.get(key)
        if not waits:
            self._stop_gang_retry(key)
        elif current is None or current[0] != uid or current[1].done():
            self._stop_gang_retry(key)
            task = asyncio.get_running_loop().create_task(self._retry_gang(key, uid))
            self._gang_retries[key] = (uid, task)

    def _stop_gang_retry(self, key: JobKey) -> None:
        current = self._gang_retries.pop(key, None)
        if current is not None:
            current[1].cancel()

    async def _retry_gang(self, key: JobKey, owner: str) -> None:
        """Write the waiting gang's PodGroup again and again, at doubling intervals up to
        GANG_RETRY_MAX_SECONDS, so coscheduling looks at the gang again (the module's
        docstring says why); ends when the PodGroup is gone or not the job's."""
        wait = GANG_RETRY_FIRST_SECONDS
        while True:
            await asyncio.sleep(wait)
            wait = min(wait * 2, GANG_RETRY_MAX_SECONDS)
            try:
                current = await self.kube.get(POD_GROUP, *key)
                if current is None:
                    return
                seen = Seen.read(POD_GROUP, current)
                if holder(seen, owner) != "job":
                    return
                if not await self._stamp(seen, owner, c.ANNOTATION_GANG_RETRY):
                    return
            except ApiError as err:  # tried again at the next interval
                log_api_error(err)

    async def _nudge(self, seen: Seen, owner: str) -> None:
        """Write the PodGroup once more after its spec changed, so coscheduling looks at its
        waiting gang again with the new spec in its cache (the module's docstring says why)."""
        await asyncio.sleep(POD_GROUP_NUDGE_SECONDS)
        try:
            await self._stamp(seen, owner, c.ANNOTATION_POD_GROUP_CHANGED)
        except ApiError as err:  # the scheduler's 5-minute flush remains
            log_api_error(err)

    async def _stamp(self, seen: Seen, owner: str, annotation: str) -> bool:
        """Write the time now as `annotation` on the job's PodGroup `seen` (a write that
        coscheduling sees as the PodGroup's update); False when it is gone or replaced."""
        stamp = format_time(datetime.now(UTC))
        return await self.owned.annotate(seen, owner, {annotation: stamp})
