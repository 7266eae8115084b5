"""A TFJob's replica logs: as they are now, or followed and merged as they come. The one
follower of replica logs, for `taas logs -f` and the dashboard alike.

    logs = JobLogs(namespace, list_pods, lines, container="tensorflow", poll_s=POLL_S,
                   tail=None, limit=None, refused=None)
    async for line in logs.follow(finished=None): ...         # merged, until the job ends

    follower = LogFollower(client, namespace, job, replica=None, container="tensorflow")
        # client: a JobPods (a TFJobClient is one: its connection and its `pods`)
    follower.now() -> Iterator[LogLine]                       # each started replica in turn
    follower.follow(finished: () -> bool) -> Iterator[LogLine]  # JobLogs, for a blocking caller

Following (`JobLogs`, asynchronous): every `poll_s` the job's pods are listed; each pod whose
container has started gets a reader task on its log stream (`GET pods/log?follow=true`, which
the apiserver proxies from the pod's kubelet; its last `tail` lines first when given): a new pod
uid (a recreated replica) and a container restarted in place (a new restart count) each get
theirs. A stream the apiserver refuses (a container starting) goes to `refused`, which may
raise, and is asked again at a later look. The lines of every reader come out of one bounded
queue, tagged with the replica (`worker-1`) as `taas run` tags them. It ends when `finished()`
says the job has ended and every stream has closed, or `GRACE_S` after the end for streams that
stay open (a PS kept by cleanPodPolicy None); without `finished`, when the caller leaves. At most
`limit` pods are read (a note says which were left out).

`LogFollower.follow` runs it on an event loop of its own (`apiserver.blocking.Apart`, as the
client's watches run) and hands the lines over through a bounded queue: a slow caller holds the
streams back, it cannot grow memory.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Protocol

from taas_operator.api.resources import POD
from taas_operator.apiserver.blocking import NO_ANSWER, Apart, Connection, LineStream
from taas_operator.apiserver.errors import ApiError, ConfigError, Forbidden, Request, Unreachable
from taas_operator.apiserver.transport import StreamError
from taas_operator.client.errors import ClientError
from taas_operator.client.models import LogLine, ReplicaPod

POLL_S = 0.5
GRACE_S = 5.0
#: Lines waiting for the caller, at most (the readers wait when it is full).
QUEUE_LINES = 1000
_END = object()

ListPods = Callable[[], Awaitable[list[ReplicaPod]]]
Lines = Callable[[str, dict[str, str]], AsyncIterator[str]]
Refused = Callable[[ReplicaPod, ApiError], None]


def replica_name(text: str) -> str:
    """'worker-1', 'Worker-1' and 'worker:1' all name the replica 'worker-1'."""
    return text.strip().lower().replace(":", "-")


class JobLogs:
    """One job's replica logs, followed and merged (see the module)."""

    def __init__(
        self,
        namespace: str,
        list_pods: ListPods,
        lines: Lines,
        container: str = "tensorflow",
        poll_s: float = POLL_S,
        tail: int | None = None,
        limit: int | None = None,
        refused: Refused | None = None,
    ) -> None:
        self.namespace, self.list_pods, self.lines = namespace, list_pods, lines
        self.container = container
        self.poll_s, self.tail, self.limit, self.refused = poll_s, tail, limit, refused

    async def follow(
        self, finished: Callable[[], Awaitable[bool]] | None = None
    ) -> AsyncIterator[LogLine]:
        """Lines of every replica as they come (see the module)."""
        out: asyncio.Queue[object] = asyncio.Queue(QUEUE_LINES)
        readers: dict[tuple[str, int], asyncio.Task[None]] = {}
        open_readers, ended_at, next_look, said_limit = 0, None, 0.0, False
        try:
            while True:
                now = time.monotonic()
                if now >= next_look:
                    next_look = now + self.poll_s
                    pods = await self.list_pods()
                    if self.limit is not None and len(pods) > self.limit and not said_limit:
                        said_limit = True
                        yield self._note(pods)
                    open_readers += self._start_new(pods[: self.limit], readers, out)
                    if ended_at is None and finished is not None and await finished():
                        ended_at = now
                        pods = await self.list_pods()  # the last ones started
                        open_readers += self._start_new(pods[: self.limit], readers, out)
                try:
                    item = await asyncio.wait_for(out.get(), timeout=0.1)
                except TimeoutError:
                    item = None
                if item is _END:
                    open_readers -= 1
                elif isinstance(item, BaseException):
                    raise item
                elif isinstance(item, LogLine):
                    yield item
                over = ended_at is not None and (open_readers == 0 or now - ended_at > GRACE_S)
                if over and out.empty():
                    return
        finally:
            for task in readers.values():
                task.cancel()

    def _note(self, pods: list[ReplicaPod]) -> LogLine:
        left = ", ".join(p.replica for p in pods[self.limit :][:5])
        return LogLine(
            replica="",
            pod="",
            text=f"following the first {self.limit} of {len(pods)} replicas; choose a replica "
            f"to read another, e.g. {left}",
        )

    def _start_new(
        self,
        pods: list[ReplicaPod],
        readers: dict[tuple[str, int], asyncio.Task[None]],
        out: asyncio.Queue[object],
    ) -> int:
        """A reader for each started pod (uid, restart count) not yet read; how many."""
        started = 0
        for pod in pods:
            key = (pod.uid, pod.restarts)
            if not pod.started or key in readers:
                continue
            readers[key] = asyncio.create_task(self._read(pod, key, readers, out))
            started += 1
        return started

    async def _read(
        self,
        pod: ReplicaPod,
        key: tuple[str, int],
        readers: dict[tuple[str, int], asyncio.Task[None]],
        out: asyncio.Queue[object],
    ) -> None:
        query = {"container": self.container, "follow": "true"}
        if self.tail is not None:
            query["tailLines"] = str(self.tail)
        try:
            async for text in self.lines(POD.path(self.namespace, pod.name, "log"), query):
                await out.put(LogLine(replica=pod.replica, pod=pod.name, text=text))
        except ApiError as err:
            del readers[key]  # asked again at a later look
            try:
                if self.refused is not None:
                    self.refused(pod, err)
            except Exception as fatal:
                await out.put(fatal)
        await out.put(_END)  # not when cancelled: nobody reads any more


class JobPods(Protocol):
    """What the follower needs of a client: its connection (log streams) and a job's pods."""

    conn: Connection

    def pods(self, name: str, namespace: str | None = None) -> list[ReplicaPod]: ...


class LogFollower:
    """Reads one job's replica logs through a client (a TFJobClient)."""

    def __init__(
        self,
        client: JobPods,
        namespace: str,
        job: str,
        replica: str | None = None,
        container: str = "tensorflow",
    ) -> None:
        self.client, self.namespace, self.job = client, namespace, job
        self.replica = replica_name(replica) if replica else None
        self.container = container

    def _pods(self) -> list[ReplicaPod]:
        pods = self.client.pods(self.job, self.namespace)
        if self.replica is None:
            return pods
        return [p for p in pods if p.replica == self.replica]

    def now(self) -> Iterator[LogLine]:
        """Every started replica's log as it is now, replica after replica."""
        pods = self._pods()
        if self.replica is not None and not pods:
            have = ", ".join(p.replica for p in self.client.pods(self.job, self.namespace))
            raise ClientError(
                f"TFJob {self.job} has no replica {self.replica} (it has: {have or 'no pods'}); "
                f"fix: --replica with one of those"
            )
        for pod in pods:
            if not pod.started:
                if self.replica is not None:
                    raise ClientError(
                        f"replica {pod.replica} of TFJob {self.job} has not started yet (phase "
                        f"{pod.phase}); fix: taas logs -f waits for it"
                    )
                continue
            for text in self._stream(pod):
                yield LogLine(replica=pod.replica, pod=pod.name, text=text)

    def _stream(self, pod: ReplicaPod) -> LineStream:
        """The pod's container log as it is (`GET pods/log`)."""
        query = {"container": self.container, "follow": "false"}
        request = Request("get", "pods/log", self.namespace, pod.name)
        path = POD.path(self.namespace, pod.name, "log")
        return self.client.conn.log_stream(request, path, query)

    def follow(self, finished: Callable[[], bool]) -> Iterator[LogLine]:
        """Lines of every replica as they come (`JobLogs`, on a loop of its own)."""
        conn = self.client.conn
        transport = conn.transport()
        handover: queue.Queue[object] = queue.Queue(QUEUE_LINES)
        stop = threading.Event()

        async def pods() -> list[ReplicaPod]:
            return await asyncio.to_thread(self._pods)

        async def done() -> bool:
            return await asyncio.to_thread(finished)

        async def lines(path: str, query: dict[str, str]) -> AsyncIterator[str]:
            pod = path.rstrip("/").split("/")[-2]  # .../pods/<name>/log
            request = Request("get", "pods/log", self.namespace, pod)
            try:
                async for line in transport.lines(path, query):
                    yield line
            except StreamError as err:
                raise conn.refusal(err.status, err.message, request) from None
            except NO_ANSWER as err:
                raise conn.no_answer(err) from None

        def refused(pod: ReplicaPod, error: ApiError) -> None:
            if isinstance(error, ConfigError | Forbidden | Unreachable):
                raise error  # not a container still starting: the caller's to see

        def hand(item: object) -> None:
            while not stop.is_set():
                try:
                    handover.put(item, timeout=0.2)
                    return
                except queue.Full:
                    continue

        async def run() -> None:
            logs = JobLogs(self.namespace, pods, lines, self.container, refused=refused)
            try:
                async for line in logs.follow(done):
                    hand(line)
            except Exception as err:
                hand(err)
            finally:
                hand(_END)
                await transport.close()

        task = Apart(run(), name=f"taas-logs-{self.job}")
        try:
            while True:
                try:
                    item = handover.get(timeout=0.5)
                except queue.Empty:
                    if task.done() and handover.empty():
                        return
                    continue
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, LogLine)
                yield item
        finally:
            stop.set()
            task.stop()
