"""Writing a TFJob's status: checked against the version read, its watch echo expected.

    writer = StatusWriter(kube, cache, echoes, request, forget)
    await writer.write(key, body, status) -> dict | None    # the job as stored, or None

A PUT of the status subresource with the resourceVersion the pass read: any other change since
makes it fail with a Conflict, which means the cache was stale, so the job is read again and
another pass requested (the plan is made again from the fresh object). A job deleted meanwhile
(404) is forgotten. Either way `write` returns None and the pass stops there. The MODIFIED
event the write causes starts no pass, even when it comes before the answer (`Echoes`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from taas_operator.api.constants import PLURAL
from taas_operator.controller.echoes import Echoes, expecting_echo
from taas_operator.controller.jobcache import JobCache, JobKey
from taas_operator.controller.kube import Conflict, KubeClient, NotFound

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

    async def write(
        self, key: JobKey, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any] | None:
        """PUT `status` onto `body`; the stored job (also cached), or None (see the module)."""
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
        return stored
