"""A TFJob's logs from a cluster: each replica's pod log followed (`pods/log?follow=true`),
merged with the `[worker-1]` prefixes `taas run` writes.

    logs = PodLogs(api)
    async for line in logs.follow(namespace, name, replica): ...   # ActionError when no pod
    logs.close()

Shared: one identity's log views of the same pod share one follow (one `pods/log?follow`
request at a time per pod, fanned out to every view of it); a view joining late gets the
follow's last `LOG_TAIL_LINES` lines first. A follow stops when its last view leaves. A log the
apiserver refuses (a pod not started yet) is asked again after `LOG_RETRY_SECONDS`, doubling to
`LOG_RETRY_MAX_SECONDS` while it stays refused.

Bounded: at most `MAX_PODS` pods are followed for one view (the page says which were left out:
pick a replica to read another); each view's lines wait in a buffer of `QUEUE_LINES` that drops
the oldest for a slow view and says how many (a slow view never slows the others); a follow
keeps `LOG_TAIL_LINES` lines. Views themselves are capped by the server's stream slots.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from taas_operator.api.constants import DEFAULT_CONTAINER_NAME, LABEL_JOB_NAME
from taas_operator.api.resources import POD
from taas_operator.apiserver.errors import ApiError, Unreachable
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.dashboard.cluster.follow import REFUSED, list_all
from taas_operator.dashboard.source import ActionError, LogLine, short_name
from taas_operator.dashboard.streams import LogBuffer

LOG_TAIL_LINES = 500
LOG_RETRY_SECONDS, LOG_RETRY_MAX_SECONDS = 3.0, 24.0
MAX_PODS = 16
QUEUE_LINES = 5000

PodKey = tuple[str, str]


class PodFollow:
    """One pod's followed log and the views reading it."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.recent: deque[LogLine] = deque(maxlen=LOG_TAIL_LINES)
        self.views: set[LogBuffer[LogLine]] = set()
        self.task: asyncio.Task[None] | None = None
        self.requests = 0  # `pods/log` requests made (for the tests and the curious)

    def put(self, line: LogLine) -> None:
        self.recent.append(line)
        for view in self.views:
            view.put(line)


class PodLogs:
    """The pod logs followed for one identity, one follow per pod (see the module)."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.follows: dict[PodKey, PodFollow] = {}

    async def follow(
        self, namespace: str, name: str, replica: str | None
    ) -> AsyncIterator[LogLine]:
        """The job's lines (each pod's last LOG_TAIL_LINES first), then as they come."""
        names = await self._pods(namespace, name, replica)
        if len(names) > MAX_PODS:
            left = ", ".join(short_name(name, n) for n in names[MAX_PODS:][:5])
            yield LogLine(
                replica="dashboard",
                text=f"(taas dashboard: following the first {MAX_PODS} of {len(names)} replicas; "
                f"choose a replica to read another, e.g. {left})",
            )
            names = names[:MAX_PODS]
        view: LogBuffer[LogLine] = LogBuffer(QUEUE_LINES)
        keys = [(namespace, n) for n in names]
        try:
            for key in keys:
                self._join(key, short_name(name, key[1]), view)
            while True:
                line = await view.get()
                dropped = view.take_dropped()
                if dropped:
                    note = f"(taas dashboard: {dropped} lines dropped: this view read too slowly)"
                    yield LogLine(replica="dashboard", text=note)
                yield line
        finally:
            for key in keys:
                self._leave(key, view)

    async def _pods(self, namespace: str, name: str, replica: str | None) -> list[str]:
        try:
            pods, _ = await list_all(
                self.api, POD.path(namespace), {"labelSelector": f"{LABEL_JOB_NAME}={name}"}
            )
        except REFUSED as exc:
            raise ActionError(
                exc.status, f"You may not list pods in {namespace}: {exc!s}"
            ) from None
        except Unreachable as exc:
            message = f"The apiserver at {self.api.server} is not answering: {exc}"
            raise ActionError(503, message) from None
        names = sorted(str(p["metadata"]["name"]) for p in pods)
        names = [n for n in names if replica in (None, short_name(name, n))]
        if not names:
            raise ActionError(404, f"no pod of TFJob {namespace}/{name} to read logs from yet")
        return names

    def _join(self, key: PodKey, label: str, view: LogBuffer[LogLine]) -> None:
        follow = self.follows.get(key)
        if follow is None:
            follow = self.follows[key] = PodFollow(label)
            follow.task = asyncio.create_task(self._pod_log(key, follow))
        for line in follow.recent:
            view.put(line)
        follow.views.add(view)

    def _leave(self, key: PodKey, view: LogBuffer[LogLine]) -> None:
        follow = self.follows.get(key)
        if follow is None:
            return
        follow.views.discard(view)
        if not follow.views:
            del self.follows[key]
            if follow.task is not None:
                follow.task.cancel()

    def close(self) -> list[asyncio.Task[None]]:
        """Stop every follow; the tasks, for the caller to await."""
        tasks = [f.task for f in self.follows.values() if f.task is not None]
        for task in tasks:
            task.cancel()
        self.follows.clear()
        return tasks

    async def _pod_log(self, key: PodKey, follow: PodFollow) -> None:
        namespace, pod = key
        path = POD.path(namespace, pod, "log")
        params = {"container": DEFAULT_CONTAINER_NAME, "follow": "true"}
        params["tailLines"] = str(LOG_TAIL_LINES)
        said, wait = "", LOG_RETRY_SECONDS
        while True:
            try:
                follow.requests += 1
                async for text in self.api.lines(path, params):
                    follow.put(LogLine(replica=follow.label, text=text))
                    wait = LOG_RETRY_SECONDS
                params.pop("tailLines", None)
                params["sinceTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            except ApiError as exc:  # refused (the server's words), or Unreachable
                message = str(exc)
                if message != said:  # say each different reason once
                    said = message
                    text = f"(taas dashboard: cannot read this log yet: {message}; retrying)"
                    follow.put(LogLine(replica=follow.label, text=text))
                await asyncio.sleep(wait)
                wait = min(wait * 2, LOG_RETRY_MAX_SECONDS)
                continue
            await asyncio.sleep(LOG_RETRY_SECONDS)
