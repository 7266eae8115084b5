"""The Controller: watch events in, passes out. One per operator process.

    controller = Controller(settings: OperatorSettings, kube: KubeClient)
    controller.job_seen(body, event_type)        # a TFJob watch event (ADDED/MODIFIED/listing)
    controller.job_gone(namespace, name)         # a TFJob DELETED event
    controller.child_seen(namespace, job_name, event_type, ref, rv)
                                                 # a pod/service/NetworkPolicy of the job changed
    len(controller.jobs)                         # TFJobs cached (the liveness probe shows it)
    await controller.close()

Each trigger only caches what it saw and asks the work queue (`WorkQueue`) for a pass of the job
(`jobpass.JobPass.run`); the queue coalesces bursts and runs one pass per job at a time. The
watch events that only echo the operator's own writes start no pass (`echoes.Echoes`): the
ADDED events of the objects a pass created, the MODIFIED event of its status write, and a TFJob
version already cached. Every other event does.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from datetime import datetime
from typing import Any

from taas_operator.api.constants import PLURAL
from taas_operator.controller.echoes import Echoes, Ref
from taas_operator.controller.jobcache import JobCache, JobKey, job_key
from taas_operator.controller.jobpass import JobPass
from taas_operator.controller.kube import KubeClient
from taas_operator.controller.workqueue import WorkQueue
from taas_operator.settings import OperatorSettings

logger = logging.getLogger("taas_operator.controller")


class Controller:
    """Holds the TFJob cache, the echoes, the work queue and the passes."""

    def __init__(self, settings: OperatorSettings, kube: KubeClient) -> None:
        self.settings, self.kube = settings, kube
        self.jobs = JobCache()
        self._echoes = Echoes()
        self.queue = WorkQueue(self._run_pass, max_running=settings.passes_at_once)
        self.passes = JobPass(
            settings, kube, self.jobs, self._echoes, self.queue.request, self._gone
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
            self.queue.request(key)

    def job_gone(self, namespace: str, name: str) -> None:
        """A TFJob was deleted: forget it (its children go with their owner reference)."""
        self._gone((namespace, name))

    def child_seen(
        self,
        namespace: str,
        job_name: str,
        event_type: str | None = None,
        ref: Ref | None = None,
        rv: str = "",
    ) -> None:
        """A pod, service or NetworkPolicy (`ref` = (plural, name)) of the job changed or
        vanished; the ADDED event of an object this process has just created starts no pass."""
        key = (namespace, job_name)
        if ref is not None and not self._echoes.seen(key, ref, event_type, rv):
            logger.debug("%s/%s: echo of our creation of %s %s", *key, *ref)
            return
        self.queue.request(key)

    async def close(self) -> None:
        """Stop the work queue (timers and running passes), then close the API connections."""
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
