"""The dashboard's jobs from a local run (`taas run --dashboard`): the runner's own state.

    LocalSource()                       # a dashboard.source.Source and a local.RunObserver
    run_jobs(jobs, options, observer=source)

The runner tells the source of every change (`changed(run)`, from its main thread) and hands it
every log line (from the replicas' reader threads) and engine event. The source writes, in the
runner's thread, what Kubernetes would serve for the same job: the TFJob as JSON (its status is
what `taas run` computed with the operator's planner), one pod per replica in the pod shape (phase,
the `tensorflow` container's state, restart count, exit code and reason) and Events; then hands
them to the server's event loop with `call_soon_threadsafe`. The page's views are built from
these by the same code as in a cluster (`dashboard.views`).

Logs: the newest `LOG_LINES` lines of each replica are kept (a page opened late sees them), and
each open log stream has a bounded queue: a browser too slow to keep up loses lines, and is told
how many, rather than growing the runner's memory.

Actions are refused: `taas run` owns the job (Ctrl-C in its terminal stops it).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from taas_operator.api import TFJob, format_time
from taas_operator.client.programs import ProgramManifests
from taas_operator.dashboard.board import JobWatch, Key
from taas_operator.dashboard.source import (
    ActionError,
    LogLine,
    Permissions,
    Source,
    refused_everywhere,
    short_name,
)
from taas_operator.local.job_run import JobRun
from taas_operator.local.kubelet import LocalPod

LOG_LINES = 2000
STREAM_QUEUE = 5000
MAX_EVENTS = 200
_READ_ONLY = "a local run: taas run manages this job (Ctrl-C in its terminal stops it)"


def _now() -> str:
    return format_time(datetime.now(UTC))


def pod_object(pod: LocalPod, recreations: int, started: str) -> dict[str, Any]:
    """A local replica in the shape of a Kubernetes pod (what dashboard.views reads)."""
    alive = pod.alive
    state: dict[str, Any]
    last: dict[str, Any] = {}
    ended = {"exitCode": pod.exit_code, "reason": pod.reason or ""}
    if alive:
        state = {"running": {"startedAt": started}}
    elif pod.restart_at is not None:
        state, last = {"waiting": {"reason": "CrashLoopBackOff"}}, {"terminated": ended}
    elif pod.exit_code is not None:
        state = {"terminated": ended}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    deleted = pod.deleting_since is not None
    meta: dict[str, Any] = {
        "name": pod.name,
        "labels": dict(pod.manifest["metadata"].get("labels") or {}),
        "creationTimestamp": started,
        "uid": pod.uid,
    }
    if deleted and alive:
        meta["deletionTimestamp"] = format_time(pod.deleting_since)  # type: ignore[arg-type]
    return {
        "metadata": meta,
        # A deleted replica keeps the word `taas run`'s table shows (Stopped, Error, deleted).
        "status": {
            "phase": pod.state() if deleted and not alive else pod.phase,
            "startTime": started,
            "containerStatuses": [
                {
                    "name": "tensorflow",
                    "ready": alive,
                    "restartCount": pod.restart_count + recreations,
                    "state": state,
                    "lastState": last,
                }
            ],
        },
        "spec": {"nodeName": f"localhost (pid {pod.pid})" if pod.pid else "localhost"},
    }


class LocalSource(Source):
    """A local run's jobs; also the runner's observer."""

    mode = "local"

    def __init__(self) -> None:
        super().__init__()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.latest: dict[Key, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.events: dict[Key, deque[dict[str, Any]]] = {}
        self.watches: dict[Key, JobWatch] = {}
        self.lines: dict[tuple[str, str], deque[LogLine]] = {}  # (namespace, job) -> lines
        self.streams: set[tuple[Key, str | None, asyncio.Queue[LogLine | int]]] = set()
        self.namespaces: dict[str, str] = {}  # job name -> namespace (log lines name the job)
        self.started_at: dict[str, str] = {}  # pod uid -> first seen
        self.created: dict[Key, str] = {}
        self.ended = False
        self._event_ids = itertools.count(1)

    # -- runner side (its threads) -------------------------------------------------------------
    def _hand_over(self, fn: Any, *args: Any) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)

    def snapshot(self, run: JobRun) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The run as a TFJob and pods, read in the runner's thread."""
        job = run.job
        key = (job.namespace, job.name)
        tfjob = job.model_dump(mode="json", by_alias=True, exclude_none=True)
        tfjob["metadata"]["namespace"] = job.namespace
        tfjob["metadata"]["creationTimestamp"] = self.created.setdefault(key, _now())
        pods = []
        for name, pod in {**run.ended, **run.pods}.items():
            recreation = job.status.recreations.get(name)
            started = self.started_at.setdefault(pod.uid, _now())
            pods.append(pod_object(pod, recreation.count if recreation else 0, started))
        return tfjob, pods

    def started(self, runs: Sequence[JobRun]) -> None:
        for run in runs:
            self.namespaces[run.job.name] = run.job.namespace
            self.changed(run)

    def changed(self, run: JobRun) -> None:
        self._hand_over(self._apply, *self.snapshot(run))

    def finished(self, runs: Sequence[JobRun]) -> None:
        for run in runs:
            self.changed(run)
        self._hand_over(self._end)

    def line(self, job: str, pod: str, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        self._hand_over(self._line, job, LogLine(replica=short_name(job, pod), text=text))

    def event(self, job: TFJob, type_: str, reason: str, message: str) -> None:
        stamp = _now()
        event = {
            "metadata": {"name": f"{job.name}.{next(self._event_ids)}", "namespace": job.namespace},
            "involvedObject": {"kind": "TFJob", "name": job.name, "namespace": job.namespace},
            "type": type_,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": "taas run"},
        }
        self._hand_over(self._event, (job.namespace, job.name), event)

    # -- loop side -----------------------------------------------------------------------------
    def _apply(self, tfjob: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        meta = tfjob["metadata"]
        key = (meta["namespace"], meta["name"])
        self.latest[key] = (tfjob, pods)
        if not self.board.synced:
            self.board.reset([t for t, _ in self.latest.values()])
        else:
            self.board.upsert(tfjob)
        watch = self.watches.get(key)
        if watch is not None:
            watch.set_pods(pods)
            watch.set_job(tfjob)

    def _end(self) -> None:
        self.ended = True
        self.board.set_notes(["the run has ended: this page shows its last state"])

    def _event(self, key: Key, event: dict[str, Any]) -> None:
        self.events.setdefault(key, deque(maxlen=MAX_EVENTS)).append(event)
        watch = self.watches.get(key)
        if watch is not None:
            watch.add_event(event)

    def _line(self, job: str, line: LogLine) -> None:
        key = (self.namespaces.get(job, "default"), job)
        self.lines.setdefault(key, deque(maxlen=LOG_LINES)).append(line)
        for stream_key, replica, queue in self.streams:
            if stream_key == key and replica in (None, line.replica):
                if queue.full():
                    continue  # counted by the reader as dropped: qsize stays at the limit
                queue.put_nowait(line)

    # -- Source --------------------------------------------------------------------------------
    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()

    async def close(self) -> None:
        self.loop = None

    async def open_job(self, namespace: str, name: str) -> JobWatch:
        key = (namespace, name)
        watch = self.watches.get(key)
        if watch is None:
            watch = self.watches[key] = JobWatch(namespace, name)
            tfjob, pods = self.latest.get(key, (None, []))
            watch.set_pods(pods)
            watch.set_events(list(self.events.get(key, ())))
            watch.set_job(tfjob)
        watch.users += 1
        return watch

    async def release_job(self, watch: JobWatch) -> None:
        watch.users -= 1
        if watch.users <= 0:
            self.watches.pop((watch.namespace, watch.name), None)

    async def logs(self, namespace: str, name: str, replica: str | None) -> AsyncIterator[LogLine]:
        key = (namespace, name)
        if key not in self.latest:
            raise ActionError(404, f"TFJob {namespace}/{name} is not part of this run")
        queue: asyncio.Queue[LogLine | int] = asyncio.Queue(maxsize=STREAM_QUEUE)
        entry = (key, replica, queue)
        for line in list(self.lines.get(key, ())):
            if replica in (None, line.replica):
                yield line
        self.streams.add(entry)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, LogLine):
                    yield item
        finally:
            self.streams.discard(entry)

    async def permissions(self, namespace: str) -> Permissions:
        return refused_everywhere(_READ_ONLY)

    async def set_suspend(self, namespace: str, name: str, suspend: bool) -> None:
        raise ActionError(405, _READ_ONLY)

    async def delete(self, namespace: str, name: str) -> None:
        raise ActionError(405, _READ_ONLY)

    async def create(self, manifest: dict[str, Any]) -> tuple[str, str]:
        raise ActionError(405, f"{_READ_ONLY}; submit new jobs with taas run or to a cluster")

    async def create_program(
        self, made: ProgramManifests, names: Mapping[str, str]
    ) -> tuple[str, str]:
        return await self.create(made.tfjob)

    def info(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "where": "this machine (taas run)",
            "readOnly": True,
            "namespaces": sorted({ns for ns, _ in self.latest}),
        }
