"""The Controller: watch events in, passes out. One per operator process.

    controller = Controller(settings: OperatorSettings, kube: KubeClient)
    controller.job_seen(body, event_type)        # a TFJob watch event (ADDED/MODIFIED/listing)
    controller.job_gone(namespace, name)         # a TFJob DELETED event
    controller.child_listed(plural, body)        # kopf's index hook: a child listed/added/changed
    controller.child_seen(plural, event_type, body)   # a child's watch event (deletions too)
    controller.start()                           # in the loop: arm the periodic child audit
    len(controller.jobs)                         # TFJobs cached (the liveness probe shows it)
    await controller.close()

Each trigger only caches what it saw and asks the work queue (`WorkQueue`) for a pass of the job
(`jobpass.JobPass.run`); the queue coalesces bursts and runs one pass per job at a time. The
watch events that only echo the operator's own writes start no pass (`echoes.Echoes`): the
ADDED events of the objects a pass created, the MODIFIED event of its status write, and a TFJob
version already cached. Every other event does. What kopf lists (at start-up, or again after a
lost watch) asks for background passes, except a TFJob without status (a new job): a restart
among thousands of jobs re-checks them all, but serves a new job first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Hashable, Mapping
from datetime import datetime
from typing import Any

from taas_operator.api.constants import LABEL_JOB_NAME, PLURAL
from taas_operator.controller.children import CHILD_SELECTOR, ChildCache
from taas_operator.controller.echoes import Echoes
from taas_operator.controller.jobcache import JobCache, JobKey, job_key
from taas_operator.controller.jobpass import JobPass
from taas_operator.controller.kube import CHILD_KINDS, KubeClient
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")
#: A re-list is over when no unchanged child came again for this long; then one LIST checks it.
AUDIT_QUIET_S = 2.0
AUDIT_RETRY_S = 10.0
#: Every this often, each kind and namespace cached is audited anyway (see `children`).
AUDIT_PERIOD_S = 900.0


class Controller:
    """Holds the TFJob cache, the echoes, the work queue and the passes."""

    def __init__(self, settings: OperatorSettings, kube: KubeClient) -> None:
        self.settings, self.kube = settings, kube
        self.jobs = JobCache()
        self.children = ChildCache()
        self._echoes = Echoes()
        self._audits: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._periodic: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.queue = WorkQueue(self._run_pass, max_running=settings.passes_at_once)
        self.passes = JobPass(
            settings, kube, self.jobs, self.children, self._echoes, self.queue.request, self._gone
        )

    def job_seen(self, body: dict[str, Any], event_type: str | None = None) -> None:
        """A TFJob was listed, added or modified: cache the newest version and pass over it.

        The echo of our own status write (a version already cached, or the one a write still
        waiting for its answer made) starts no pass.
        """
        if self.jobs.has_seen(body):
            return
        self.jobs.remember(body)
        key = job_key(body)
        rv = str(body["metadata"].get("resourceVersion") or "")
        if self._echoes.seen(key, (PLURAL, key[1]), event_type, rv):
            # Listed (at start-up, or again after a lost watch) with a status: a job some pass
            # handled before, checked again when nothing else waits. Without a status: new.
            self.queue.request(key, background=event_type is None and bool(body.get("status")))

    def job_gone(self, namespace: str, name: str) -> None:
        """A TFJob was deleted: forget it (its children go with their owner reference)."""
        self._gone((namespace, name))

    def child_listed(self, plural: str, body: Mapping[str, Any]) -> None:
        """A pod, service or NetworkPolicy as kopf lists, adds or modifies it (before any
        handler, see `children`): keep it; one shown again unchanged means a re-list."""
        if self.children.put(plural, body):
            namespace = str((body.get("metadata") or {}).get("namespace", ""))
            if not self.children.is_suspect(plural, namespace):
                logger.info("%s in %s listed again: any deletions missed?", plural, namespace)
            self.children.suspect(plural, namespace)
            self._audit_later(plural, namespace)

    def child_seen(self, plural: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A pod, service or NetworkPolicy of a job changed or vanished: a pass over the job,
        unless it is the ADDED event of an object this process has just created."""
        meta = body.get("metadata") or {}
        job_name = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
        if not job_name:
            return
        if event_type == "DELETED":
            self.children.drop(plural, body)
        key = (str(meta.get("namespace", "")), str(job_name))
        ref = (plural, str(meta.get("name", "")))
        if not self._echoes.seen(key, ref, event_type, str(meta.get("resourceVersion", ""))):
            logger.debug("%s/%s: echo of our creation of %s %s", *key, *ref)
            return
        self.queue.request(key, background=event_type is None)  # listed: a re-check

    def _audit_later(self, plural: str, namespace: str, delay: float = AUDIT_QUIET_S) -> None:
        """LIST `plural` in `namespace` once the re-list has been quiet for `delay` seconds."""
        old = self._audits.pop((plural, namespace), None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._audits[(plural, namespace)] = loop.call_later(
            delay, lambda: self._spawn(self._audit(plural, namespace))
        )

    def start(self) -> None:
        """Arm the periodic audit of the child cache (from the running loop)."""
        self._periodic = asyncio.get_running_loop().call_later(
            AUDIT_PERIOD_S, self.audit_periodically
        )

    def audit_periodically(self) -> None:
        """Audit every kind and namespace cached now, and again in `AUDIT_PERIOD_S`."""
        loop = asyncio.get_running_loop()
        for plural, namespace in self.children.places():
            if (plural, namespace) not in self._audits:
                self._spawn(self._audit(plural, namespace))
        self._periodic = loop.call_later(AUDIT_PERIOD_S, self.audit_periodically)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)  # a reference, so the task is not collected while it runs
        task.add_done_callback(self._tasks.discard)

    async def _audit(self, plural: str, namespace: str) -> None:
        """Drop the children a re-list no longer shows (deleted in a watch gap); pass over
        the jobs that lost some."""
        self._audits.pop((plural, namespace), None)
        try:
            kind = CHILD_KINDS[plural]
            items, version = await self.kube.list_all(kind, namespace, CHILD_SELECTOR)
        except Exception as err:  # the apiserver may be down again: try later
            logger.warning("checking %s in %s after a re-list failed: %s", plural, namespace, err)
            self._audit_later(plural, namespace, AUDIT_RETRY_S)
            return
        for job in self.children.audit(plural, namespace, items, version):
            logger.info("%s/%s: %s deleted while the watch was down", namespace, job, plural)
            self.queue.request((namespace, job))

    async def close(self) -> None:
        """Stop the work queue (timers and running passes), then close the API connections."""
        for timer in [*self._audits.values(), *([self._periodic] if self._periodic else [])]:
            timer.cancel()
        for task in self._tasks:
            task.cancel()
        await self.queue.close()
        await self.kube.close()

    def _gone(self, key: JobKey) -> None:
        self.jobs.forget(key)
        self._echoes.forget(key)
        self.passes.forget(key)
        self.queue.forget(key)

    async def _run_pass(self, key: Hashable) -> datetime | None:
        assert isinstance(key, tuple)
        return await self.passes.run(key)
