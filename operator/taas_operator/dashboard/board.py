"""The state the server holds, shared by every open page, and how changes reach each page.

    JobsBoard                          # the jobs list: summaries by (namespace, name)
        .reset(tfjobs)  .upsert(tfjob)  .remove(namespace, name)
        .set_problem(text | None)  .set_notes(lines)
        .subscribe() -> ListSubscriber  .unsubscribe(sub)
    ListSubscriber.next() -> ListUpdate          # waits; coalesced changes since the last call
    JobWatch                            # one job's TFJob, pods and events, for its page
        .set_job(tfjob | None)  .set_pod(pod)  .drop_pod(name)  .set_pods(pods)
        .add_event(event)  .set_events(events)  .set_problem(what, text | None)
        .subscribe() -> asyncio.Event  .detail() -> JobDetail | None

Memory stays bounded however fast jobs change and however slow a browser reads: a subscriber
holds at most one pending entry per job (a newer change replaces an older one, a removal
replaces both), never a queue of every change; a job page is re-sent whole when it changed
(a few KB even for 64 replicas), at most `DETAIL_INTERVAL` apart. Everything here runs on the
server's event loop; sources in other threads hand their changes over with
`loop.call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from taas_operator.dashboard.views import JobDetail, JobSummary, job_detail, job_summary

Key = tuple[str, str]
#: At most this many events kept per job page (the newest; Kubernetes keeps events 1 h).
MAX_EVENTS = 200
# What a job page watches, in the order its problems are shown: a refused TFJob explains more
# than refused pods or events of the same namespace.
PROBLEM_ORDER = ("this TFJob", "its pods", "its events")


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name", "")))


@dataclass
class ListUpdate:
    """What a page's list needs next: everything (`snapshot`), or changes since last time."""

    snapshot: list[JobSummary] | None = None
    upserts: list[JobSummary] = field(default_factory=list)
    removals: list[Key] = field(default_factory=list)
    status: dict[str, Any] | None = None


class ListSubscriber:
    """One open jobs list: pending changes, at most one per job."""

    def __init__(self, board: JobsBoard) -> None:
        self.board = board
        self.pending: dict[Key, JobSummary | None] = {}
        self.snapshot = True  # the first update is the whole list
        self.status = True
        self.wake = asyncio.Event()
        self.wake.set()

    async def next(self) -> ListUpdate:
        """Wait for a change, then return every change pending (coalesced)."""
        await self.wake.wait()
        self.wake.clear()
        update = ListUpdate()
        if self.status:
            update.status = self.board.status()
            self.status = False
        if self.snapshot:
            self.snapshot = False
            self.pending.clear()
            update.snapshot = self.board.summaries()
            return update
        pending, self.pending = self.pending, {}
        for key, summary in pending.items():
            if summary is None:
                update.removals.append(key)
            else:
                update.upserts.append(summary)
        return update


class JobsBoard:
    """Every job the user may read, as list rows, and the list's subscribers."""

    def __init__(self) -> None:
        self.jobs: dict[Key, JobSummary] = {}
        self.subscribers: set[ListSubscriber] = set()
        self.problem: str | None = None
        self.notes: list[str] = []
        self.synced = False  # the first full list has arrived

    def summaries(self) -> list[JobSummary]:
        return sorted(self.jobs.values(), key=lambda j: (j.namespace, j.name))

    def status(self) -> dict[str, Any]:
        return {"problem": self.problem, "notes": list(self.notes), "synced": self.synced}

    def _wake(self, snapshot: bool = False, status: bool = False) -> None:
        for sub in self.subscribers:
            sub.snapshot |= snapshot
            sub.status |= status
            sub.wake.set()

    def reset(self, tfjobs: list[dict[str, Any]]) -> None:
        """A full list (first list, or a relist after a watch broke): pages get a snapshot."""
        self.jobs = {key_of(j): job_summary(j) for j in tfjobs}
        self.synced = True
        self._wake(snapshot=True, status=True)

    def upsert(self, tfjob: dict[str, Any]) -> None:
        summary = job_summary(tfjob)
        key = (summary.namespace, summary.name)
        if self.jobs.get(key) == summary:
            return
        self.jobs[key] = summary
        for sub in self.subscribers:
            sub.pending[key] = summary
            sub.wake.set()

    def remove(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        if self.jobs.pop(key, None) is None:
            return
        for sub in self.subscribers:
            sub.pending[key] = None
            sub.wake.set()

    def set_problem(self, problem: str | None) -> None:
        """Say (or stop saying) what keeps the list from being current, e.g. an outage."""
        if problem != self.problem:
            self.problem = problem
            self._wake(status=True)

    def set_notes(self, notes: list[str]) -> None:
        """Lasting remarks, e.g. namespaces the user may not read."""
        if notes != self.notes:
            self.notes = list(notes)
            self._wake(status=True)

    def subscribe(self) -> ListSubscriber:
        sub = ListSubscriber(self)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: ListSubscriber) -> None:
        self.subscribers.discard(sub)


class JobWatch:
    """One job's objects, kept current by a source while a page shows the job."""

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace, self.name = namespace, name
        self.tfjob: dict[str, Any] | None = None
        self.pods: dict[str, dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.problems: dict[str, str] = {}  # what is watched -> why it cannot be, in order
        self.loaded = False  # the TFJob was looked up at least once (None then: not found)
        self.subscribers: set[asyncio.Event] = set()
        self.users = 0
        self.stop: Any = None  # the source's handle to end its watches

    def _changed(self) -> None:
        for wake in self.subscribers:
            wake.set()

    def subscribe(self) -> asyncio.Event:
        wake = asyncio.Event()
        wake.set()
        self.subscribers.add(wake)
        return wake

    def unsubscribe(self, wake: asyncio.Event) -> None:
        self.subscribers.discard(wake)

    def set_job(self, tfjob: dict[str, Any] | None) -> None:
        self.tfjob, self.loaded = tfjob, True
        self._changed()

    def set_pods(self, pods: list[dict[str, Any]]) -> None:
        self.pods = {str((p.get("metadata") or {}).get("name")): p for p in pods}
        self._changed()

    def set_pod(self, pod: dict[str, Any]) -> None:
        self.pods[str((pod.get("metadata") or {}).get("name"))] = pod
        self._changed()

    def drop_pod(self, name: str) -> None:
        if self.pods.pop(name, None) is not None:
            self._changed()

    def _event_key(self, event: dict[str, Any]) -> str:
        meta = event.get("metadata") or {}
        return str(meta.get("uid") or meta.get("name") or id(event))

    def set_events(self, events: list[dict[str, Any]]) -> None:
        self.events = {}
        for event in events[-MAX_EVENTS:]:
            self.events[self._event_key(event)] = event
        self._changed()

    def add_event(self, event: dict[str, Any]) -> None:
        self.events[self._event_key(event)] = event
        while len(self.events) > MAX_EVENTS:
            self.events.pop(next(iter(self.events)))
        self._changed()

    @property
    def problem(self) -> str | None:
        """The problem to show: the TFJob's own before its pods' or events' (one watch each)."""
        for what in PROBLEM_ORDER:
            if what in self.problems:
                return self.problems[what]
        return next(iter(self.problems.values()), None)

    def set_problem(self, what: str, problem: str | None) -> None:
        """Record (or clear, with None) the problem of watching ``what``."""
        before = self.problem
        if problem is None:
            self.problems.pop(what, None)
        else:
            self.problems[what] = problem
        if self.problem != before:
            self._changed()

    def detail(self) -> JobDetail | None:
        """The page's content, or None while the job does not exist."""
        if self.tfjob is None:
            return None
        return job_detail(self.tfjob, list(self.pods.values()), list(self.events.values()))
