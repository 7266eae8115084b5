"""Following TFJobs as they change, on the one list-then-watch loop (`apiserver.listwatch`).

    changes(client, namespace, all_namespaces=False, name=None, timeout=None)
        -> Iterator[JobChange]      # what TFJobClient.watch returns
    # client: a JobLister (a TFJobClient is one: connection, namespace, list_objects)

First every job there now (ADDED), then every change (ADDED, MODIFIED, DELETED). A watch the
server ends (its timeout) is opened again from the last version seen; one whose version the
server has forgotten (410 Gone), or that failed in a way the loop cannot explain (an event too
long to read, an ERROR event), lists again and reports what changed meanwhile, so a caller's
view never misses a job nor keeps a deleted one.

The loop is asynchronous; a caller of this module is not (`taas get -w`, `TFJobClient.wait`):
the loop runs on an event loop of its own (`apiserver.blocking.Apart`: its hand-over may wait
for the caller, whose own calls need the connection's loop) and hands each change over through
a bounded queue (a slow caller holds the watch back; it cannot grow
memory). The list is the client's own call, so its errors are the client's; a refused watch is
translated the same way.
Leaving the iteration (or reaching `timeout`) cancels the loop and closes its connection.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Protocol

from taas_operator.api.constants import PLURAL
from taas_operator.api.models import TFJob
from taas_operator.api.resources import TFJOB
from taas_operator.apiserver.blocking import NO_ANSWER, Apart, Connection
from taas_operator.apiserver.errors import ApiError, Request, Unreachable
from taas_operator.apiserver.listwatch import Retry, list_then_watch
from taas_operator.apiserver.transport import StreamError
from taas_operator.client.manifests import read_job
from taas_operator.client.models import JobChange

Key = tuple[str, str]
#: Changes waiting for a slow caller, at most.
QUEUE_CHANGES = 1000
#: Each watch asks the server to end it after this long (the loop then goes on).
WATCH_SECONDS = 300
#: What ends the loop and goes to the caller: a refused watch, the apiserver gone, a list or a
#: job the client cannot read. Anything else (an event too long to read, an ERROR event) lists
#: again.
_FATAL = (StreamError, ApiError, *NO_ANSWER)


class JobLister(Protocol):
    """What following needs of a client: its connection, its namespace, and one list of the
    stored TFJobs with the list's resourceVersion."""

    conn: Connection
    namespace: str

    def list_objects(
        self, namespace: str | None, all_namespaces: bool
    ) -> tuple[list[dict[str, Any]], str]: ...


class _Handover:
    """The loop's sink: changes into a bounded queue for the caller's thread."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.queue: queue.Queue[JobChange | BaseException] = queue.Queue(maxsize=QUEUE_CHANGES)
        self.stop = threading.Event()
        self.known: dict[Key, TFJob] | None = None
        self.listing: dict[Key, TFJob] = {}

    def put(self, item: JobChange | BaseException) -> None:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def page(self, items: list[dict[str, Any]]) -> None:
        for job in map(read_job, items):
            if self.name is None or job.name == self.name:
                self.listing[(job.namespace, job.name)] = job

    def listed(self) -> None:
        now, self.listing = self.listing, {}
        for change in _differences(self.known or {}, now):
            self.put(change)
        self.known = now

    def changed(self, event_type: str, obj: dict[str, Any]) -> None:
        job = read_job(obj)
        known = self.known if self.known is not None else {}
        if event_type == "DELETED":
            known.pop((job.namespace, job.name), None)
        else:
            known[(job.namespace, job.name)] = job
        self.put(JobChange.model_validate({"type": event_type, "job": job}))

    def failed(self, error: BaseException, delay: float) -> None:
        """A watch that failed (not fatally): the loop lists again after `delay`."""


def changes(
    client: JobLister,
    namespace: str | None,
    all_namespaces: bool = False,
    name: str | None = None,
    timeout: float | None = None,
) -> Iterator[JobChange]:
    """See the module."""
    deadline = None if timeout is None else time.monotonic() + timeout
    conn = client.conn
    ns = "" if all_namespaces else (namespace or client.namespace)
    what = Request("watch", PLURAL, ns)
    fields = {"fieldSelector": f"metadata.name={name}"} if name else {}
    sink = _Handover(name)
    transport = conn.transport()

    async def pages() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        items, version = await asyncio.to_thread(client.list_objects, ns or None, all_namespaces)
        yield items, version

    def watch(version: str) -> AsyncIterator[Mapping[str, Any]]:
        left = WATCH_SECONDS if deadline is None else deadline - time.monotonic()
        seconds = max(1, min(int(left) + 1, WATCH_SECONDS))
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": version}
        return transport.stream(TFJOB.path(ns), {**fields, **query, "timeoutSeconds": str(seconds)})

    async def follow() -> None:
        try:
            retry = Retry(fatal=_FATAL, delay=lambda failures: min(float(failures), 5.0))
            await list_then_watch(pages, watch, sink, retry)
        except StreamError as err:
            sink.put(conn.refusal(err.status, err.message, what))
        except NO_ANSWER as err:
            sink.put(
                Unreachable(f"lost the watch on {PLURAL} at {conn.server}: {err or type(err)}")
            )
        except Exception as err:  # the client's own errors (a refused list): the caller's
            sink.put(err)
        finally:
            await transport.close()

    task = Apart(follow())
    try:
        while deadline is None or time.monotonic() < deadline:
            left = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            try:
                item = sink.queue.get(timeout=max(left, 0.01))
            except queue.Empty:
                if task.done() and sink.queue.empty():
                    return
                continue
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        sink.stop.set()
        task.stop()  # the caller left: the loop ends, its transport closes


def _differences(before: dict[Key, TFJob], now: dict[Key, TFJob]) -> Iterator[JobChange]:
    for key, job in now.items():
        old = before.get(key)
        if old is None:
            yield JobChange(type="ADDED", job=job)
        elif old.metadata.resource_version != job.metadata.resource_version:
            yield JobChange(type="MODIFIED", job=job)
    for key in set(before) - set(now):
        yield JobChange(type="DELETED", job=before[key])
