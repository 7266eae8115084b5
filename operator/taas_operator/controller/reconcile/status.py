"""Writing a TFJob's status: checked against the version read, its watch echo expected, what it
changed counted, what the CRD pruned from it kept.

    writer = StatusWriter(kube, cache, echoes, request, forget)
    writer.restore(key, body) -> body      # before parsing: recreations a pruning CRD dropped
    await writer.write(key, body, status, before) -> dict | None   # the job as stored, or None
    writer.forget_job(key)                 # the job is gone

A PUT of the status subresource with the resourceVersion the pass read: any other change since
makes it fail with a Conflict, which means the cache was stale, so the job is read again and
another pass requested (the plan is made again from the fresh object). A job deleted meanwhile
(404) is forgotten. Either way `write` returns None and the pass stops there. The MODIFIED
event the write causes starts no pass, even when it comes before the answer (`Echoes`).
A write the apiserver accepted is counted (`metrics.status_written`: the conditions that became
true, the recreations added, against `before`, the status it replaced), and compared with what
was stored: recreations the installed CRD prunes are kept in memory (`pruning`) and put back by
`restore` before the next pass parses the job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from taas_operator.api.constants import PLURAL
from taas_operator.controller import metrics
from taas_operator.controller.apiserver.kube import Conflict, KubeClient, NotFound
from taas_operator.controller.reconcile.pruning import PrunedRecreations
from taas_operator.controller.watch.echoes import Echoes, expecting_echo
from taas_operator.controller.watch.jobcache import JobCache, JobKey

logger = logging.getLogger("taas_operator.controller")


class StatusWriter:
    """The one place a TFJob's status is written."""

    def __init__(
        self,
        kube: KubeClient,
        cache: JobCache,
        echoes: Echoes,
        request: Callable[[JobKey], None],
        forget: Callable[[JobKey], None],
    ) -> None:
        self.kube, self.cache, self.echoes = kube, cache, echoes
        self.request, self.forget = request, forget
        self.pruned = PrunedRecreations()

    def restore(self, key: JobKey, body: dict[str, Any]) -> dict[str, Any]:
        """The job with the recreations written put back, where the stored status lost them."""
        return self.pruned.restore(key, body)

    def forget_job(self, key: JobKey) -> None:
        """The job is gone: drop what was kept of its writes."""
        self.pruned.forget(key)

    async def write(
        self,
        key: JobKey,
        body: dict[str, Any],
        status: dict[str, Any],
        before: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        """PUT `status` onto `body` (whose status, recreations kept in memory included, is
        `before`); the stored job (also cached), or None (see the module)."""
        write = self.kube.replace_job_status(body, status)
        try:
            stored = await expecting_echo(
                self.echoes, self.request, key, (PLURAL, key[1]), "MODIFIED", write
            )
        except Conflict:
            logger.debug("%s/%s: status conflict, reading the job again", *key)
            fresh = await self.kube.get_job(*key)
            if fresh is not None:
                self.cache.replace(key, fresh)
                self.request(key)
            return None
        except NotFound:
            self.forget(key)
            return None
        assert stored is not None  # replace_job_status always returns the object
        self.cache.remember(stored)
        self.pruned.check(key, (body.get("metadata") or {}).get("uid") or "", status, stored)
        metrics.status_written(key[0], before, status)
        return stored
