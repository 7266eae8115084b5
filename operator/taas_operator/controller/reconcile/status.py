"""Writing a TFJob's status: checked against the version read, its watch echo expected, what it
changed counted, what the CRD pruned from it kept.

    writer = StatusWriter(kube, cache, expectations, request, forget)
    writer.restore(key, body) -> body      # before parsing: recreations a pruning CRD dropped
    writer.hold_until(key, before, after, replicas, now) -> datetime | None  # None: write now
    await writer.write(key, body, status, before) -> dict | None   # the job as stored, or None
    writer.forget_job(key)                 # the job is gone

A PUT of the status subresource with the resourceVersion the pass read: any other change since
makes it fail with a Conflict, which means the cache was stale, so the job is read again and
another pass requested (the plan is made again from the fresh object). A job deleted meanwhile
(404) is forgotten. Either way `write` returns None and the pass stops there. The MODIFIED
event the write causes starts no pass, even when it comes before the answer (`Expectations`).
A write the apiserver accepted is counted (`metrics.status_written`: the conditions that became
true, the recreations added, against `before`, the status it replaced), and compared with what
was stored: recreations the installed CRD prunes are kept in memory (`recreations`) and put back by
`restore` before the next pass parses the job.

Write cost (issue 22): in a job of more than `SMALL_JOB` replicas, a change of the replica
counts alone (pods going Running or ending, nothing else: `planner.counts_only_change`) is held
until the held moves add up to a quarter of the job's replicas, or for at most `COUNTS_HOLD_S`
after the first one held; the pass asks to run again then. A job of 1,100 replicas whose pods
start one by one would otherwise write its status on nearly every pass; now a few times. Every
transition (a condition, a recreation, start and completion times, progress) is written at
once, and so is the count that first shows every replica up (Running or Succeeded: what
Kueue's waitForPodsReady reads) and every change of a small job. Nothing is lost by holding: each
pass recounts the pods.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from taas_operator.api.constants import PLURAL
from taas_operator.api.models import TFJobStatus
from taas_operator.apiserver.errors import Conflict, NotFound
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller import metrics
from taas_operator.controller.reconcile.recreations import PrunedRecreations
from taas_operator.controller.watch.expectations import Expectations, expecting_echo
from taas_operator.controller.watch.jobcache import JobCache, JobKey
from taas_operator.planner import counts_only_change

#: Jobs of at most this many replicas have every change written at once.
SMALL_JOB = 10
#: In a bigger job, a count-only change is written once the held moves reach this share of
#: its replicas...
COUNTS_SHARE = 0.25
#: ... or this long after the first move held.
COUNTS_HOLD_S = 10.0

logger = logging.getLogger("taas_operator.controller")


def _up(status: TFJobStatus) -> int:
    """Replicas Running or Succeeded."""
    return sum(r.active + r.succeeded for r in status.replica_statuses.values())


class StatusWriter:
    """The one place a TFJob's status is written."""

    def __init__(
        self,
        kube: KubeClient,
        cache: JobCache,
        expectations: Expectations,
        request: Callable[[JobKey], None],
        forget: Callable[[JobKey], None],
    ) -> None:
        self.kube, self.cache, self.expectations = kube, cache, expectations
        self.request, self.forget = request, forget
        self.pruned = PrunedRecreations()
        self._held: dict[JobKey, datetime] = {}  # job -> when its first unwritten move was held

    def restore(self, key: JobKey, body: dict[str, Any]) -> dict[str, Any]:
        """The job with the recreations written put back, where the stored status lost them."""
        return self.pruned.restore(key, body)

    def forget_job(self, key: JobKey) -> None:
        """The job is gone: drop what was kept of its writes."""
        self.pruned.forget(key)
        self._held.pop(key, None)

    def hold_until(
        self, key: JobKey, before: TFJobStatus, after: TFJobStatus, replicas: int, now: datetime
    ) -> datetime | None:
        """When to write `after` over `before` if not now (see the module); None: now."""
        moved = None if replicas <= SMALL_JOB else counts_only_change(before, after)
        now_up = _up(after) >= replicas > _up(before)
        if moved is None or moved >= math.ceil(replicas * COUNTS_SHARE) or now_up:
            self._held.pop(key, None)
            return None
        due = self._held.setdefault(key, now) + timedelta(seconds=COUNTS_HOLD_S)
        if now >= due:
            self._held.pop(key, None)
            return None
        return due

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
                self.expectations, self.request, key, (PLURAL, key[1]), "MODIFIED", write
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
        self._held.pop(key, None)
        self.cache.remember(stored)
        self.pruned.check(key, (body.get("metadata") or {}).get("uid") or "", status, stored)
        metrics.status_written(key[0], before, status)
        return stored
