"""The Controller: watch events in, passes out. One per operator process.

    controller = Controller(settings: OperatorSettings, kube: KubeClient, identity="", priority=0)
    await controller.start()                     # kopf startup: the watches (and peering) begin,
                                                 # and freed memory is given back (`memory`)
    controller.tfjob_event(event_type, body)     # a TFJob watch event (listed/ADDED/.../DELETED)
    controller.child_event(plural, event_type, body)  # a pod/service/NetworkPolicy's
    len(controller.jobs)                         # TFJobs cached (the liveness probe shows it)
    await controller.close()

The watches are `informer.Informer`s: TFJobs, and the jobs' pods, services and NetworkPolicies
(selected by the apiserver: `CHILD_SELECTOR`), in every namespace or each watched one. Each
event only updates a cache (`JobCache`, `ChildCache`) and asks the work queue (`WorkQueue`) for
a pass of the job (`reconciler.Reconciler.run`); the queue coalesces bursts and runs one pass
per job at a time, the namespaces with work taking turns (`--namespace-weight`). No pass starts
before every watch has listed once (the caches are complete), nor while peering says another
replica is active (`peering.PeeringGate`). The watch events that only echo the operator's own
writes start no pass (`expectations.Expectations`): the ADDED events of the objects a pass
created, the MODIFIED event of its status write, and a TFJob version already cached. Every other
event does. What a watch lists (at start-up, or again after a lost watch) asks for background
passes, except a TFJob without status (a new job): a restart among thousands of jobs re-checks
them all, but serves a new job first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Hashable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from taas_operator.api.constants import LABEL_JOB_NAME, PLURAL
from taas_operator.api.resources import POD, POLICY, SERVICE, TFJOB
from taas_operator.apiserver.errors import ApiError
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller import metrics
from taas_operator.controller.memory import release_freed_memory
from taas_operator.controller.reconcile.owned import Owned
from taas_operator.controller.reconcile.reconciler import Reconciler
from taas_operator.controller.seen import Seen
from taas_operator.controller.watch.children import CHILD_SELECTOR, ChildCache
from taas_operator.controller.watch.expectations import Expectations
from taas_operator.controller.watch.informer import Informer
from taas_operator.controller.watch.jobcache import JobCache, JobKey, job_key
from taas_operator.controller.watch.peering import PeeringGate
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")


class Controller:
    """Holds the watches, the caches, the expectations, the work queue and the passes."""

    def __init__(
        self, settings: OperatorSettings, kube: KubeClient, identity: str = "", priority: int = 0
    ) -> None:
        self.settings, self.kube = settings, kube
        self.jobs = JobCache()
        self.children = ChildCache()
        self._expectations = Expectations()
        weights = settings.weights
        self.queue = WorkQueue(
            self._run_pass,
            max_running=settings.passes_at_once,
            cost=self._pass_cost,
            group=_namespace,
            weight=lambda namespace: weights.get(str(namespace), 1),
        )
        self.queue.pause()  # until every watch has listed once (and peering lets us)
        self.passes = Reconciler(
            settings,
            kube,
            self.jobs,
            self.children,
            self._expectations,
            self.queue.request,
            self._gone,
        )
        places = settings.namespaces or [""]
        kinds = [POD, SERVICE, POLICY] if settings.network_policy else [POD, SERVICE]
        self.informers = [Informer(kube, TFJOB, ns, "", self.tfjob_event) for ns in places] + [
            Informer(kube, kind, ns, CHILD_SELECTOR, partial(self.child_event, kind.plural))
            for kind in kinds
            for ns in places
        ]
        self.peering = (
            PeeringGate(kube, settings.peering, identity, priority, settings.namespaces, self._gate)
            if settings.peering
            else None
        )
        self._synced = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Start the watches (and the peering gate) as tasks of the running loop."""
        for informer in self.informers:
            self._spawn(informer.run())
        if self.peering is not None:
            self._spawn(self.peering.run())
        self._spawn(self._open_when_listed())
        self._spawn(release_freed_memory())

    def tfjob_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A TFJob watch event: DELETED forgets the job, anything else caches it and asks for
        a pass (not for the echo of our own status write: a version already cached, or the one
        a write still waiting for its answer made)."""
        meta = body.get("metadata") or {}
        if event_type == "DELETED":
            key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
            if key in self.jobs:  # no need to parse the cached job
                metrics.job_deleted(key[0])
            if not meta.get("deletionTimestamp"):  # deleted at once: see _delete_children
                uid = str(meta.get("uid") or "")
                children = self.children.controlled(*key, uid)
                if children:
                    self._spawn(self._delete_children(key, uid, children))
            self._gone(key)
            return
        job = dict(body)
        if self.jobs.has_seen(job):
            return
        self.jobs.remember(job)
        key = job_key(job)
        rv = str(meta.get("resourceVersion") or "")
        if self._expectations.seen(key, (PLURAL, key[1]), event_type, rv):
            # Listed with a status: a job some pass handled before, checked again when
            # nothing else waits. Without a status: a new job.
            self.queue.request(key, background=event_type is None and bool(job.get("status")))

    def child_event(self, plural: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A pod, service or NetworkPolicy of a job was listed, changed or deleted: cache it
        and ask for a pass over the job, unless it is the ADDED event of an object this
        process has just created."""
        meta = body.get("metadata") or {}
        job_name = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
        if not job_name:
            return
        if event_type == "DELETED":
            self.children.drop(plural, body)
        else:
            self.children.put(plural, body)
        key = (str(meta.get("namespace", "")), str(job_name))
        ref = (plural, str(meta.get("name", "")))
        if not self._expectations.seen(key, ref, event_type, str(meta.get("resourceVersion", ""))):
            logger.debug("%s/%s: echo of our creation of %s %s", *key, *ref)
            return
        self.queue.request(key, background=event_type is None)  # listed: a re-check

    async def close(self) -> None:
        """Stop the watches, the work queue, the progress reads and the PodGroup writes to
        come, then close the API connections."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.queue.close()
        await self.passes.progress.close()
        await self.passes.actions.close()
        await self.kube.close()

    async def _open_when_listed(self) -> None:
        await asyncio.gather(*(informer.synced.wait() for informer in self.informers))
        logger.info(
            "listed %d TFJobs and %d of their pods, services and policies",
            len(self.jobs),
            len(self.children),
        )
        self._synced = True
        self._gate(self.peering.active if self.peering is not None else True)

    def _gate(self, active: bool) -> None:
        """Passes run once every watch has listed, and while peering lets this replica act."""
        if active and self._synced and (self.peering is None or self.peering.active):
            self.queue.resume()
        else:
            self.queue.pause()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)  # a reference, so the task is not collected while it runs
        task.add_done_callback(self._tasks.discard)

    async def _delete_children(self, key: JobKey, uid: str, children: list[Seen]) -> None:
        """A TFJob deleted at once (`kubectl delete`, background propagation): its pods,
        services and NetworkPolicy are deleted now, as the garbage collector would a moment
        later (seconds, or until its next discovery of the TFJob kind after a restart), so that
        the pods stop when asked and a job applied again under the name finds its service names
        free as soon as the pods' names. Only a deletion without finalizers: an orphaning one
        (`--cascade=orphan`) or a foreground one passes through a deletionTimestamp and stays
        the garbage collector's; a child orphaned or adopted meanwhile is left alone, and so
        is an object that took a child's name since the watch showed it (`owned`: each
        deletion is conditional on the uid read)."""
        logger.info("%s/%s: deleted; deleting its %d pods, services and policies", *key,
                    len(children))  # fmt: skip

        owned = Owned(self.kube)

        async def delete(child: Seen) -> None:
            try:
                await owned.delete(child, uid)
            except ApiError as err:  # the garbage collector still deletes it
                logger.warning("%s/%s: could not delete %s: %s", *key, child, err)

        await asyncio.gather(*(delete(child) for child in children))

    def _gone(self, key: JobKey) -> None:
        self.jobs.forget(key)
        self.children.forget_job(*key)
        self._expectations.forget(key)
        self.passes.forget(key)
        self.queue.forget(key)

    def _pass_cost(self, key: Hashable) -> float:
        assert isinstance(key, tuple)
        return self.passes.cost(key)

    async def _run_pass(self, key: Hashable) -> datetime | None:
        assert isinstance(key, tuple)
        with metrics.timed_pass():
            return await self.passes.run(key)


def _namespace(key: Hashable) -> Hashable:
    """Whose turn a job's pass takes in the work queue: its namespace's."""
    assert isinstance(key, tuple)
    return key[0]
