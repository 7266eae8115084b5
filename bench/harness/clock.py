"""The harness's eye on one namespace of the simulated cluster (or all of them: namespace ""):
when each pod and TFJob changed, as the apiserver's watch shows it, and the harness's own
requests. Used by bench.scale, bench.scheduling and bench.katib.

    clock = Clock(kubeconfig, namespace).start()    # its own event loop in a daemon thread
    Clock(kubeconfig, namespace, others={kind: handler})   # other kinds too (bench.katib: trials)
    clock.view(fn) -> fn(pods, jobs)                # read the records under the clock's lock
    clock.request(method, path, body=None, content_type=...) -> (status, answer)
    clock.requests([(method, path, body, content_type), ...]) -> [(status, answer), ...]
    clock.stop()
    clock.errors, clock.resumed                     # what broke a watch; cuts it went on from

`pods`: pod uid -> PodTimes (first seen, bound to a node, first seen Running, ended, deletion
asked, gone; its namespace and node; a terminal phase seen to end again, which no kubelet
may do; and the objects' own stamps: the apiserver's creationTimestamp, the binding's
PodScheduled time and the kubelet's (kwok's) containers' startedAt, whole seconds, epoch);
`jobs`: TFJob name -> JobTimes (Succeeded, Failed, and every change of its Running condition).
Times are `time.monotonic()` when the event arrived here. A pod's "first seen" is its creation
as the watch shows it (the apiserver's creationTimestamp has whole seconds only), so pod start-up
is measured as SIG Scalability's pod-startup SLI is: creation until Running observed by a watch.
The watches are the operator's own list-then-watch loop (`taas_operator.apiserver.listwatch`,
orjson parsing on one aiohttp pool): at 10,000 pods the harness must not be what is slow.

A watch whose stream was cut (a connection reset) goes on from the last version it saw: no
event is missed, and the cut is only noted (`resumed`). Any other error, and a 410 Gone, lists
again: a change in the gap is seen late or not at all, so the figures may be off (`errors`).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from taas_operator.api.resources import POD, TFJOB, Kind
from taas_operator.apiserver.credentials import load
from taas_operator.apiserver.listwatch import Retry, list_then_watch
from taas_operator.apiserver.transport import CUT, Transport

JOB_LABEL = "training.kubeflow.org/job-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
T = TypeVar("T")
Request = tuple[str, str, Any, str]
#: What the clock does with one event: (LISTED/ADDED/MODIFIED/DELETED, the object, when).
Handler = Callable[[str, dict[str, Any], float], None]


@dataclass
class PodTimes:
    """One pod (one uid) as the watch showed it."""

    name: str
    uid: str
    job: str
    replica_type: str
    seen: float
    node: str | None = None
    scheduled: float | None = None
    running: float | None = None
    ended: float | None = None
    phase: str = "Pending"
    deleting: float | None = None
    gone: float | None = None
    #: The apiserver's creationTimestamp, its PodScheduled condition's time and when its last
    #: container started (epoch seconds).
    created_stamp: float | None = None
    started_stamp: float | None = None
    scheduled_stamp: float | None = None
    namespace: str = ""
    #: When a watch showed it not Succeeded/Failed again after it was (None: never).
    reopened: float | None = None


@dataclass
class JobTimes:
    """One TFJob's conditions as the watch showed them."""

    succeeded: float | None = None
    failed: float | None = None
    running: bool = False
    #: (when, Running condition True?) at every change of it.
    running_changes: list[tuple[float, bool]] = field(default_factory=list)


def _stamp(value: object) -> float | None:
    """An RFC 3339 timestamp of the apiserver ("2026-11-26T23:11:48Z") as epoch seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _started(pod: dict[str, Any]) -> float | None:
    """When the last of the pod's containers started, as its kubelet (kwok) wrote it; None
    until every one has."""
    states = (pod.get("status") or {}).get("containerStatuses") or []
    running = [(s.get("state") or {}).get("running") or {} for s in states]
    stamps = [_stamp(r.get("startedAt")) for r in running]
    if not stamps or any(t is None for t in stamps):
        return None
    return max(t for t in stamps if t is not None)


def _scheduled(pod: dict[str, Any]) -> float | None:
    """When the scheduler bound the pod: its PodScheduled condition, as the binding wrote it."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return _stamp(cond.get("lastTransitionTime"))
    return None


def _true(conditions: list[dict[str, Any]], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def record_pod(pods: dict[str, PodTimes], event_type: str, pod: dict[str, Any], now: float) -> None:
    """Update `pods` (uid -> PodTimes) with one LISTED/ADDED/MODIFIED/DELETED pod seen `now`."""
    meta = pod.get("metadata") or {}
    uid = str(meta.get("uid", ""))
    record = pods.get(uid)
    if record is None:
        labels = meta.get("labels") or {}
        record = PodTimes(
            name=str(meta.get("name", "")),
            uid=uid,
            job=str(labels.get(JOB_LABEL, "")),
            replica_type=str(labels.get(TYPE_LABEL, "")),
            seen=now,
            created_stamp=_stamp(meta.get("creationTimestamp")),
            namespace=str(meta.get("namespace", "")),
        )
        pods[uid] = record
    record.node = (pod.get("spec") or {}).get("nodeName") or record.node
    if record.node and record.scheduled is None:
        record.scheduled = now
        record.scheduled_stamp = _scheduled(pod)
    phase = str((pod.get("status") or {}).get("phase") or "Pending")
    record.phase = phase
    if phase == "Running" and record.running is None:
        record.running = now
        record.started_stamp = _started(pod)
    if phase in ("Succeeded", "Failed") and record.ended is None:
        record.ended = now
    elif phase not in ("Succeeded", "Failed") and record.ended is not None:
        record.reopened = record.reopened or now
    if meta.get("deletionTimestamp") and record.deleting is None:
        record.deleting = now
    if event_type == "DELETED" and record.gone is None:
        record.gone = now


class _Sink:
    """Keeps the records (apiserver.listwatch.Sink for one kind)."""

    def __init__(self, clock: Clock, on_object: Handler):
        self.clock, self.on_object = clock, on_object
        self.lists = 0

    def page(self, items: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        with self.clock.lock:
            for item in items:
                self.on_object("LISTED", item, now)

    def listed(self) -> None:
        self.lists += 1
        if self.lists == 1:
            self.clock.synced.release()
        elif not self.clock.errors:  # no error before it: the apiserver's 410 Gone
            self.clock.errors.append("listed again (410 Gone): a change in the gap may be missed")

    def changed(self, event_type: str, obj: dict[str, Any]) -> None:
        now = time.monotonic()
        with self.clock.lock:
            self.on_object(event_type, obj, now)

    def failed(self, error: BaseException, delay: float) -> None:
        noted = self.clock.resumed if isinstance(error, CUT) else self.clock.errors
        noted.append(f"{type(error).__name__}: {error}")


class Clock:
    """Pods and TFJobs of one namespace (every one: ""), timed (see the module)."""

    def __init__(
        self,
        kubeconfig: str,
        namespace: str,
        concurrency: int = 16,
        others: Mapping[Kind, Handler] | None = None,
    ) -> None:
        self.namespace = namespace
        #: Further kinds watched the same way: each event handed to its handler under the lock.
        self.others = dict(others or {})
        self.transport = Transport(load(kubeconfig).endpoint, concurrency)
        self.lock = threading.Lock()
        self.synced = threading.Semaphore(0)
        self.pods: dict[str, PodTimes] = {}
        self.jobs: dict[str, JobTimes] = {}
        #: What made a watch list again (a change may be missed); cuts it went on from.
        self.errors: list[str] = []
        self.resumed: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="clock", daemon=True)
        self._tasks: list[asyncio.Task[None]] = []

    # -- life -----------------------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> Clock:
        """Watch pods, TFJobs and the other kinds; returns once each has listed."""
        self._thread.start()
        kinds: list[tuple[Kind, Handler]] = [(POD, self._pod), (TFJOB, self._job)]
        kinds += self.others.items()

        async def begin() -> None:
            for kind, handle in kinds:
                sink = _Sink(self, handle)
                task = asyncio.get_running_loop().create_task(
                    list_then_watch(self._pages(kind), self._watch(kind), sink, Retry())
                )
                self._tasks.append(task)

        self._run(begin())
        for _ in kinds:
            if not self.synced.acquire(timeout=timeout_s):
                raise RuntimeError(f"the clock's watches did not list in {timeout_s:.0f}s")
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def end() -> None:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.transport.close()

        self._run(end())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> Clock:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- reading and writing --------------------------------------------------------------------
    def view(self, fn: Callable[[dict[str, PodTimes], dict[str, JobTimes]], T]) -> T:
        """`fn(pods, jobs)` under the lock (keep it short: the watches wait meanwhile)."""
        with self.lock:
            return fn(self.pods, self.jobs)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        return self.requests([(method, path, body, content_type)])[0]

    def requests(self, batch: list[Request]) -> list[tuple[int, Any]]:
        """Send every request of `batch` concurrently (at most `concurrency` in flight)."""

        async def send() -> list[tuple[int, Any]]:
            calls = [self.transport.call(m, p, None, b, c) for m, p, b, c in batch]
            return list(await asyncio.gather(*calls))

        return self._run(send())

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    # -- the watches ----------------------------------------------------------------------------
    def _pages(self, kind: Kind) -> Callable[[], AsyncIterator[tuple[list[dict[str, Any]], str]]]:
        async def pages() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
            query = {"limit": "500"}
            while True:
                status, data = await self.transport.call("GET", kind.path(self.namespace), query)
                if status >= 300:
                    raise RuntimeError(f"listing {kind.plural}: HTTP {status}: {data}")
                meta = data.get("metadata") or {}
                yield list(data.get("items") or []), str(meta.get("resourceVersion") or "")
                if not meta.get("continue"):
                    return
                query = {**query, "continue": str(meta["continue"])}

        return pages

    def _watch(self, kind: Kind) -> Callable[[str], AsyncIterator[Any]]:
        def watch(version: str) -> AsyncIterator[Any]:
            query = {
                "watch": "true",
                "allowWatchBookmarks": "true",
                "resourceVersion": version,
                "timeoutSeconds": str(random.randint(300, 360)),
            }
            return self.transport.stream(kind.path(self.namespace), query)

        return watch

    def _pod(self, event_type: str, pod: dict[str, Any], now: float) -> None:
        record_pod(self.pods, event_type, pod, now)

    def _job(self, event_type: str, job: dict[str, Any], now: float) -> None:
        name = str((job.get("metadata") or {}).get("name", ""))
        record = self.jobs.setdefault(name, JobTimes())
        conditions = list((job.get("status") or {}).get("conditions") or [])
        if record.succeeded is None and _true(conditions, "Succeeded"):
            record.succeeded = now
        if record.failed is None and _true(conditions, "Failed"):
            record.failed = now
        running = _true(conditions, "Running")
        if running != record.running:
            record.running = running
            record.running_changes.append((now, running))
