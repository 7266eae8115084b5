"""Keeping the child cache true: the start-up LIST, re-lists noticed, audits (see `children`).

    sync = ChildSync(cache, kube, kinds, namespaces, request, page=LIST_PAGE)
    await sync.start()           # kopf startup handler: LIST every child, then trust the cache
    sync.seen(plural, body)      # a watch listed/added/modified a child
    sync.close()

`start` runs before kopf starts any watch. Should its LIST fail (the apiserver down, RBAC),
the cache stays untrusted (passes LIST for themselves) and the LIST is tried again every
`RETRY_S`. After that: a child shown again unchanged means kopf lists again after a lost watch,
so that kind and namespace is distrusted until it is audited, `QUIET_S` after the last such
re-delivery; every kind and namespace cached is also audited `FIRST_S` after the start and then
every `PERIOD_S`. An audit is one LIST; the jobs whose children it found gone get a pass
(`request`). These timers run whether or not kopf's peering has paused this replica: they only
read, and ask for passes only over jobs whose children really vanished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from taas_operator.controller.children import CHILD_SELECTOR, ChildCache
from taas_operator.controller.jobcache import JobKey
from taas_operator.controller.kube import CHILD_KINDS, LIST_PAGE, KubeClient

logger = logging.getLogger("taas_operator.controller")

QUIET_S = 2.0
RETRY_S = 10.0
FIRST_S = 30.0
PERIOD_S = 900.0


class ChildSync:
    """The start-up LIST and the audits of one ChildCache."""

    def __init__(
        self,
        cache: ChildCache,
        kube: KubeClient,
        kinds: Sequence[str],
        namespaces: Sequence[str],
        request: Callable[[JobKey], None],
        page: int = LIST_PAGE,
    ) -> None:
        self.cache, self.kube, self.request, self.page = cache, kube, request, page
        self.kinds, self.namespaces = list(kinds), list(namespaces) or [""]
        self._timers: dict[tuple[str, str], tuple[asyncio.TimerHandle, Coroutine[Any, Any, None]]]
        self._timers = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """LIST every child (paginated; every namespace or each watched one), then trust the
        cache; on failure try again later, the cache untrusted meanwhile."""
        try:
            for plural in self.kinds:
                for namespace in self.namespaces:
                    kind = CHILD_KINDS[plural]
                    pages = self.kube.list_pages(kind, namespace, CHILD_SELECTOR, self.page)
                    async for items, _ in pages:
                        self.cache.seed(plural, items)
        except Exception as err:
            logger.warning("listing the jobs' children failed (passes list them): %s", err)
            self._later(("", "start"), RETRY_S, self.start())
            return
        self.cache.trust()
        logger.debug("%d children of jobs listed", len(self.cache))
        self._later(("", "periodic"), FIRST_S, self._audit_all())

    def seen(self, plural: str, body: Mapping[str, Any]) -> None:
        """A watch listed, added or modified a child; one shown again unchanged means a
        re-list: distrust that kind there until it is audited."""
        if not self.cache.put(plural, body):
            return
        namespace = str((body.get("metadata") or {}).get("namespace", ""))
        if not self.cache.is_suspect(plural, namespace):
            logger.info("%s in %s listed again: checking for deletions missed", plural, namespace)
        self.cache.suspect(plural, namespace)
        self._later((plural, namespace), QUIET_S, self._audit(plural, namespace))

    def close(self) -> None:
        for timer, work in self._timers.values():
            timer.cancel()
            work.close()
        for task in self._tasks:
            task.cancel()

    def _later(self, name: tuple[str, str], delay: float, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in `delay` seconds, replacing what was due under `name`."""
        old = self._timers.pop(name, None)
        if old is not None:
            old[0].cancel()
            old[1].close()  # never started: close it, or Python warns it was never awaited
        loop = asyncio.get_running_loop()

        def run() -> None:
            self._timers.pop(name, None)
            task = loop.create_task(work)
            self._tasks.add(task)  # a reference, so the task is not collected while it runs
            task.add_done_callback(self._tasks.discard)

        self._timers[name] = (loop.call_later(delay, run), work)

    async def _audit_all(self) -> None:
        for plural, namespace in sorted(self.cache.places()):
            await self._audit(plural, namespace)
        self._later(("", "periodic"), PERIOD_S, self._audit_all())

    async def _audit(self, plural: str, namespace: str) -> None:
        """One LIST of `plural` in `namespace`: drop the children it no longer has (deleted
        in a watch gap) and pass over their jobs."""
        names: set[str] = set()
        version = 0
        try:
            kind = CHILD_KINDS[plural]
            pages = self.kube.list_pages(kind, namespace, CHILD_SELECTOR, self.page)
            async for items, page_version in pages:
                names.update(str(o["metadata"]["name"]) for o in items)
                version = page_version
        except Exception as err:  # the apiserver may be down again: try later
            logger.warning("checking %s in %s failed: %s", plural, namespace, err)
            self._later((plural, namespace), RETRY_S, self._audit(plural, namespace))
            return
        for job in self.cache.audit(plural, namespace, names, version):
            logger.info("%s/%s: %s deleted while a watch was down", namespace, job, plural)
            self.request((namespace, job))
