"""A TFJob's logs from a cluster, for the page: the client's one replica-log follower
(`client.logs.JobLogs`: each replica's pod log followed, new and restarted replicas too),
merged with the `[worker-1]` prefixes `taas run` writes, shared by the views that read it.

    logs = PodLogs(api)
    async for line in logs.follow(namespace, name, replica): ...   # ActionError when no pod
    logs.close()

Shared: one identity's views of the same job (and replica) share one follow (one
`pods/log?follow` request at a time per pod, fanned out to every view); a view joining late gets
the follow's last `LOG_TAIL_LINES` lines first. A follow stops when its last view leaves, and
once the TFJob has Succeeded or Failed and its streams have closed (saying so: the pods
cleanPodPolicy deleted are not looked for again). A log the apiserver refuses (a pod not started
yet) is asked again at the next look, every `LOG_RETRY_SECONDS`; each different reason is said
once.

Bounded: at most `MAX_PODS` pods are followed for one view (the page says which were left out:
pick a replica to read another); each view's lines wait in a buffer of `QUEUE_LINES` that drops
the oldest for a slow view and says how many (a slow view never slows the others); a follow
keeps `LOG_TAIL_LINES` lines. Views themselves are capped by the server's stream slots.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

from taas_operator.api.constants import (
    COND_FAILED,
    COND_SUCCEEDED,
    DEFAULT_CONTAINER_NAME,
    LABEL_JOB_NAME,
)
from taas_operator.api.resources import POD, TFJOB
from taas_operator.api.state import body_state
from taas_operator.apiserver.errors import ApiError, Unreachable
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.client.logs import JobLogs
from taas_operator.client.models import ReplicaPod
from taas_operator.dashboard.cluster.follow import REFUSED, list_all
from taas_operator.dashboard.source import ActionError, LogLine, short_name
from taas_operator.dashboard.streams import LogBuffer

LOG_TAIL_LINES = 500
#: What a view reads last once the job has ended and every stream has closed.
ENDED = (
    "the TFJob has ended: no more lines. Pods deleted at the end (cleanPodPolicy Running, "
    "the default, deletes those still running) took their logs with them"
)
LOG_RETRY_SECONDS = 3.0
MAX_PODS = 16
QUEUE_LINES = 5000

#: (namespace, job, replica or "")
FollowKey = tuple[str, str, str]


class JobFollow:
    """One job's followed logs and the views reading them."""

    def __init__(self) -> None:
        self.recent: deque[LogLine] = deque(maxlen=LOG_TAIL_LINES)
        self.views: set[LogBuffer[LogLine]] = set()
        self.task: asyncio.Task[None] | None = None
        self.said: dict[str, str] = {}  # per replica: the last refusal said

    def put(self, line: LogLine) -> None:
        self.recent.append(line)
        for view in self.views:
            view.put(line)


class PodLogs:
    """The pod logs followed for one identity, one follow per job and replica (see the
    module)."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.follows: dict[FollowKey, JobFollow] = {}

    async def follow(
        self, namespace: str, name: str, replica: str | None
    ) -> AsyncIterator[LogLine]:
        """The job's lines (each pod's last LOG_TAIL_LINES first), then as they come."""
        await self._pods(namespace, name, replica)  # none, or not allowed: ActionError now
        view: LogBuffer[LogLine] = LogBuffer(QUEUE_LINES)
        key = (namespace, name, replica or "")
        try:
            self._join(key, view)
            while True:
                line = await view.get()
                dropped = view.take_dropped()
                if dropped:
                    note = f"(taas dashboard: {dropped} lines dropped: this view read too slowly)"
                    yield LogLine(replica="dashboard", text=note)
                yield line
        finally:
            self._leave(key, view)

    async def _pods(self, namespace: str, name: str, replica: str | None) -> list[ReplicaPod]:
        try:
            items, _ = await list_all(
                self.api, POD.path(namespace), {"labelSelector": f"{LABEL_JOB_NAME}={name}"}
            )
        except REFUSED as exc:
            raise ActionError(
                exc.status, f"You may not list pods in {namespace}: {exc!s}"
            ) from None
        except Unreachable as exc:
            message = f"The apiserver at {self.api.server} is not answering: {exc}"
            raise ActionError(503, message) from None
        pods = sorted((ReplicaPod.from_pod(p) for p in items), key=lambda p: p.name)
        pods = [p for p in pods if replica in (None, short_name(name, p.name))]
        if not pods:
            raise ActionError(
                404,
                f"no pod of TFJob {namespace}/{name} to read logs from (none started yet, or "
                f"all deleted)",
            )
        return pods

    def _join(self, key: FollowKey, view: LogBuffer[LogLine]) -> None:
        follow = self.follows.get(key)
        if follow is None:
            follow = self.follows[key] = JobFollow()
            follow.task = asyncio.create_task(self._job_log(key, follow))
        for line in follow.recent:
            view.put(line)
        follow.views.add(view)

    def _leave(self, key: FollowKey, view: LogBuffer[LogLine]) -> None:
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

    async def _job_log(self, key: FollowKey, follow: JobFollow) -> None:
        namespace, name, replica = key

        async def pods() -> list[ReplicaPod]:
            try:
                return await self._pods(namespace, name, replica or None)
            except ActionError as exc:  # said once; the next look asks again
                self._say(follow, "dashboard", f"cannot list this job's pods: {exc}")
                return []

        def refused(pod: ReplicaPod, error: ApiError) -> None:
            label = short_name(name, pod.name)
            self._say(follow, label, f"cannot read this log yet: {error}; retrying")

        logs = JobLogs(
            namespace,
            pods,
            self.api.lines,
            DEFAULT_CONTAINER_NAME,
            poll_s=LOG_RETRY_SECONDS,
            tail=LOG_TAIL_LINES,
            limit=MAX_PODS,
            refused=refused,
        )

        async def ended() -> bool:
            return await self._ended(namespace, name)

        async for line in logs.follow(ended):
            label = short_name(name, line.pod) if line.pod else "dashboard"
            text = line.text if line.pod else f"(taas dashboard: {line.text})"
            follow.put(LogLine(replica=label, text=text))
        self._say(follow, "dashboard", ENDED)

    async def _ended(self, namespace: str, name: str) -> bool:
        """Whether the TFJob has Succeeded or Failed (or is gone): no replica starts again."""
        try:
            status, data = await self.api.request("GET", TFJOB.path(namespace, name))
        except Unreachable:
            return False
        if status == 404:
            return True
        state = body_state(data.get("status") if isinstance(data, dict) else None)
        return status == 200 and state.state in (COND_SUCCEEDED, COND_FAILED)

    @staticmethod
    def _say(follow: JobFollow, label: str, message: str) -> None:
        """Put `message` on the follow, under `label`, once while it stays the same."""
        if follow.said.get(label) != message:
            follow.said[label] = message
            follow.put(LogLine(replica=label, text=f"(taas dashboard: {message})"))
