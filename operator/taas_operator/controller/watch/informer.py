"""LIST, then WATCH, one kind of object in one namespace (or all), for as long as it runs.

    informer = Informer(kube, kind, namespace, selector, handle)  # handle(event_type, body)
    await informer.run()          # forever (a task); informer.synced: an asyncio.Event
    Informer.known -> int         # objects it knows now

The loop itself (410 re-list, back-off, bookmarks) is the one of `apiserver.listwatch`; this
class is its sink. What `handle` gets, in order, as kopf would hand them over: every listed
object with the type None, then the watch's ADDED / MODIFIED / DELETED events. After a watch is
lost for good (410 Gone: its resourceVersion is too old), it LISTs again, and every object it
knew that the new LIST lacks is handed over as DELETED (its name, namespace, uid and job
label): a deletion in the gap is never missed (what Kubernetes' informers call Replace).
Watches ask for bookmarks, so a quiet kind keeps a fresh resourceVersion, and end after 5-6
minutes (then the next one goes on from the last version seen). Every error is retried, backing
off from 0.5 s to 30 s: a cut connection (the apiserver restarting) goes on from the last
version, any other (an event too long to read, an ERROR event) LISTs again first, so one
object can never stop the watch of every other; `synced` is set once the first LIST has been
handed over.

Why not kopf's watches: kopf runs every event through its per-object workers, causes and
handler machinery, which cost more CPU per event than everything TaaS itself does with it
(docs/benchmarks.md, "kopf's watches"); here an event costs its JSON parse and the handler.
kopf still does peering (see `peering`), the liveness probe and the operator's lifecycle.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from taas_operator.api.constants import LABEL_JOB_NAME
from taas_operator.api.resources import Kind
from taas_operator.apiserver.listwatch import Retry, list_then_watch
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.planner import backoff_delay

logger = logging.getLogger("taas_operator.controller")

Handler = Callable[[str | None, Mapping[str, Any]], None]
WATCH_S = (300, 360)  # each watch asks the server to end it after a random time in this range
BACKOFF_START, BACKOFF_MAX = 0.5, 30.0


def _identity(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """What the informer keeps of an object it knows: its uid and job label (small: it keeps
    one for every object)."""
    meta = body.get("metadata") or {}
    return str(meta.get("uid", "")), (meta.get("labels") or {}).get(LABEL_JOB_NAME)


def _deleted(key: tuple[str, str], identity: tuple[str, str | None]) -> dict[str, Any]:
    """The body of a DELETED event made up for an object a re-list no longer shows."""
    (namespace, name), (uid, job) = key, identity
    labels = {LABEL_JOB_NAME: job} if job is not None else {}
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid, "labels": labels}}


class Informer:
    """One kind's LIST+WATCH (see the module), on the one loop of `apiserver.listwatch`."""

    def __init__(
        self, kube: KubeClient, kind: Kind, namespace: str, selector: str, handle: Handler
    ) -> None:
        self.kube, self.kind, self.namespace, self.selector = kube, kind, namespace, selector
        self.handle = handle
        self.synced = asyncio.Event()
        self._known: dict[tuple[str, str], tuple[str, str | None]] = {}  # (ns, name) -> _identity
        self._before: dict[tuple[str, str], tuple[str, str | None]] | None = None  # a list's start
        self._seen: set[tuple[str, str]] = set()
        self._failures = 0

    @property
    def known(self) -> int:
        return len(self._known)

    def _deliver(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        if event_type == "DELETED":
            self._known.pop(key, None)
        else:
            self._known[key] = _identity(body)
        try:
            self.handle(event_type, body)
        except Exception:  # one bad object must not stop the stream
            logger.exception("handling %s %s/%s failed", self.kind.plural, *key)

    async def run(self) -> None:
        """LIST and WATCH until cancelled."""
        retry = Retry(delay=lambda n: backoff_delay(n, BACKOFF_START, BACKOFF_MAX))
        await list_then_watch(self._pages, self._watch, self, retry)

    def _where(self) -> str:
        return f"in {self.namespace}" if self.namespace else "in every namespace"

    # -- what the loop delivers (apiserver.listwatch.Sink) -----------------------------------
    def page(self, items: list[dict[str, Any]]) -> None:
        if self._before is None:
            self._before, self._seen = dict(self._known), set()
        for body in items:
            meta = body.get("metadata") or {}
            self._seen.add((str(meta.get("namespace", "")), str(meta.get("name", ""))))
            self._deliver(None, body)

    def listed(self) -> None:
        for key, identity in (self._before or {}).items():
            if key not in self._seen:  # deleted while no watch ran
                self._deliver("DELETED", _deleted(key, identity))
        self._before, self._seen = None, set()
        self.synced.set()

    def changed(self, event_type: str, obj: dict[str, Any]) -> None:
        self._failures = 0
        self._deliver(event_type, obj)

    def failed(self, error: BaseException, delay: float) -> None:
        self._failures += 1
        log = logger.warning if self._failures == 1 else logger.debug
        what = f"{self.kind.plural} {self._where()}"
        log("watching %s failed (again in %.1fs): %s", what, delay, error)

    # -- the apiserver ------------------------------------------------------------------------
    async def _pages(self) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        async for items, version in self.kube.list_pages(self.kind, self.namespace, self.selector):
            yield items, str(version)

    async def _list(self) -> None:
        """One whole LIST, delivered as the loop delivers it (also after 410 Gone)."""
        async for items, _ in self._pages():
            self.page(items)
        self.listed()

    def _watch(self, version: str) -> AsyncIterator[Any]:
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": version,
            "timeoutSeconds": str(random.randint(*WATCH_S)),
        }
        if self.selector:
            query["labelSelector"] = self.selector
        return self.kube.stream(self.kind, self.namespace, query)
