"""A TFJob's replica logs: as they are now, or followed and merged as they come.

    follower = LogFollower(client, namespace, job, replica=None, container="tensorflow")
        # client: a JobPods (a TFJobClient is one: its connection and its `pods`)
    follower.now() -> Iterator[LogLine]                       # each started replica in turn
    follower.follow(finished: () -> bool) -> Iterator[LogLine]  # merged, until the job ends

Following: every half second the job's pods are listed; each pod whose container has started
(a new pod uid: a recreated replica too) gets a reader thread on its log stream
(`GET pods/log?follow=true`, which the apiserver proxies from the pod's kubelet), and the
lines of all of them come out of one queue, tagged with the replica (`worker-1`) as `taas run`
tags them. It ends when `finished()` says the job has ended and every stream has closed, or
`GRACE_S` after the end for streams that stay open (a PS kept by cleanPodPolicy None).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from taas_operator.api.resources import POD
from taas_operator.apiserver.blocking import Connection, LineStream
from taas_operator.apiserver.errors import ApiError, ConfigError, Forbidden, Request, Unreachable
from taas_operator.client.errors import ClientError
from taas_operator.client.models import LogLine, ReplicaPod

POLL_S = 0.5
GRACE_S = 5.0
_END = object()


def replica_name(text: str) -> str:
    """'worker-1', 'Worker-1' and 'worker:1' all name the replica 'worker-1'."""
    return text.strip().lower().replace(":", "-")


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
            for text in self._stream(pod, follow=False):
                yield LogLine(replica=pod.replica, pod=pod.name, text=text)

    def _stream(self, pod: ReplicaPod, follow: bool) -> LineStream:
        """The pod's container log (`GET pods/log`), as it streams (`follow`) or as it is."""
        query = {"container": self.container, "follow": "true" if follow else "false"}
        request = Request("get", "pods/log", self.namespace, pod.name)
        path = POD.path(self.namespace, pod.name, "log")
        return self.client.conn.log_stream(request, path, query)

    def follow(self, finished: Callable[[], bool]) -> Iterator[LogLine]:
        """Lines of every replica as they come (see the module)."""
        lines: queue.Queue[object] = queue.Queue()
        streams: dict[str, LineStream] = {}
        open_readers = 0
        ended_at: float | None = None
        next_look = 0.0
        try:
            while True:
                now = time.monotonic()
                if now >= next_look:
                    next_look = now + POLL_S
                    open_readers += self._start_new(lines, streams)
                    if ended_at is None and finished():
                        ended_at = now
                        open_readers += self._start_new(lines, streams)  # last ones started
                try:
                    item = lines.get(timeout=0.1)
                except queue.Empty:
                    item = None
                if item is _END:
                    open_readers -= 1
                elif isinstance(item, LogLine):
                    yield item
                over = ended_at is not None and (open_readers == 0 or now - ended_at > GRACE_S)
                if over and lines.empty():
                    return
        finally:
            for stream in streams.values():
                stream.close()

    def _start_new(self, lines: queue.Queue[object], streams: dict[str, LineStream]) -> int:
        """Start a reader for each started pod not yet read; how many were started."""
        started = 0
        for pod in self._pods():
            if not pod.started or pod.uid in streams:
                continue
            try:
                stream = self._stream(pod, follow=True)
            except (ConfigError, Forbidden, Unreachable):
                raise
            except ApiError:
                continue  # not readable yet (container starting, pod going away): next look
            streams[pod.uid] = stream
            threading.Thread(
                target=self._read, args=(pod, stream, lines), daemon=True, name=f"log-{pod.name}"
            ).start()
            started += 1
        return started

    def _read(self, pod: ReplicaPod, stream: LineStream, lines: queue.Queue[object]) -> None:
        try:
            for text in stream:
                lines.put(LogLine(replica=pod.replica, pod=pod.name, text=text))
        finally:
            lines.put(_END)
