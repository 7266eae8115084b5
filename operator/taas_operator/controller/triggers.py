"""The Controller: watch events in, passes out. One per operator process.

    controller = Controller(settings: OperatorSettings, kube: KubeClient)
    controller.job_seen(body, event_type)        # a TFJob watch event (ADDED/MODIFIED/listing)
    controller.job_gone(namespace, name)         # a TFJob DELETED event
    await controller.start()                     # kopf startup: LIST the children (ChildSync)
    controller.child_seen(plural, event_type, body)   # a child's watch event (deletions too)
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

import logging
from collections.abc import Hashable, Mapping
from datetime import datetime
from typing import Any

from taas_operator.api.constants import LABEL_JOB_NAME, PLURAL
from taas_operator.controller.children import ChildCache
from taas_operator.controller.childsync import ChildSync
from taas_operator.controller.echoes import Echoes
from taas_operator.controller.jobcache import JobCache, JobKey, job_key
from taas_operator.controller.jobpass import JobPass
from taas_operator.controller.kube import POD, POLICY, SERVICE, KubeClient
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")


class Controller:
    """Holds the TFJob cache, the echoes, the work queue and the passes."""

    def __init__(self, settings: OperatorSettings, kube: KubeClient) -> None:
        self.settings, self.kube = settings, kube
        self.jobs = JobCache()
        self.children = ChildCache()
        self._echoes = Echoes()
        self.queue = WorkQueue(self._run_pass, max_running=settings.passes_at_once)
        self.passes = JobPass(
            settings, kube, self.jobs, self.children, self._echoes, self.queue.request, self._gone
        )
        kinds = [POD.plural, SERVICE.plural] + ([POLICY.plural] if settings.network_policy else [])
        self.sync = ChildSync(self.children, kube, kinds, settings.namespaces, self.queue.request)

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

    def child_seen(self, plural: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A pod, service or NetworkPolicy of a job changed or vanished: a pass over the job,
        unless it is the ADDED event of an object this process has just created."""
        meta = body.get("metadata") or {}
        job_name = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
        if not job_name:
            return
        if event_type == "DELETED":
            self.children.drop(plural, body)
        else:
            self.sync.seen(plural, body)
        key = (str(meta.get("namespace", "")), str(job_name))
        ref = (plural, str(meta.get("name", "")))
        if not self._echoes.seen(key, ref, event_type, str(meta.get("resourceVersion", ""))):
            logger.debug("%s/%s: echo of our creation of %s %s", *key, *ref)
            return
        self.queue.request(key, background=event_type is None)  # listed: a re-check

    async def start(self) -> None:
        """From kopf's startup handler, before any watch: LIST the jobs' children."""
        await self.sync.start()

    async def close(self) -> None:
        """Stop the work queue (timers and running passes), then close the API connections."""
        self.sync.close()
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
