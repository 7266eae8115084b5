"""A TFJob's logs from a cluster: each replica's pod log followed (`pods/log?follow=true`),
merged with the `[worker-1]` prefixes `taas run` writes.

    async for line in follow_logs(api, namespace, name, replica): ...   # ActionError when none

Bounded: at most `MAX_PODS` pods are followed for one stream (one apiserver connection each; the
page says which were left out: pick a replica to read another), and lines wait in a queue of
`QUEUE_LINES` (a slow reader slows the apiserver streams instead of growing memory).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from taas_operator.api.constants import DEFAULT_CONTAINER_NAME, LABEL_JOB_NAME
from taas_operator.api.resources import POD
from taas_operator.dashboard.cluster.listwatch import Refused, list_all
from taas_operator.dashboard.kubeapi import KubeApi, StreamRefused, Unreachable
from taas_operator.dashboard.source import ActionError, LogLine, short_name

LOG_TAIL_LINES = 500
LOG_RETRY_SECONDS = 3.0
MAX_PODS = 16
QUEUE_LINES = 5000


async def follow_logs(
    api: KubeApi, namespace: str, name: str, replica: str | None
) -> AsyncIterator[LogLine]:
    """The job's lines (the last LOG_TAIL_LINES of each pod first), then as they come."""
    try:
        pods, _ = await list_all(
            api, POD.path(namespace), {"labelSelector": f"{LABEL_JOB_NAME}={name}"}
        )
    except Refused as exc:
        raise ActionError(
            exc.status, f"You may not list pods in {namespace}: {exc.message}"
        ) from None
    except Unreachable as exc:
        message = f"The apiserver at {api.server} is not answering: {exc}"
        raise ActionError(503, message) from None
    names = sorted(str(p["metadata"]["name"]) for p in pods)
    names = [n for n in names if replica in (None, short_name(name, n))]
    if not names:
        raise ActionError(404, f"no pod of TFJob {namespace}/{name} to read logs from yet")
    if len(names) > MAX_PODS:
        left = ", ".join(short_name(name, n) for n in names[MAX_PODS:][:5])
        yield LogLine(
            replica="dashboard",
            text=f"(taas dashboard: following the first {MAX_PODS} of {len(names)} replicas; "
            f"choose a replica to read another, e.g. {left})",
        )
        names = names[:MAX_PODS]
    queue: asyncio.Queue[LogLine] = asyncio.Queue(maxsize=QUEUE_LINES)
    tasks = [asyncio.create_task(_pod_log(api, namespace, name, n, queue)) for n in names]
    try:
        while True:
            yield await queue.get()
    finally:
        for task in tasks:
            task.cancel()


async def _pod_log(
    api: KubeApi, namespace: str, job: str, pod: str, queue: asyncio.Queue[LogLine]
) -> None:
    label = short_name(job, pod)
    path = POD.path(namespace, pod, "log")
    params = {"container": DEFAULT_CONTAINER_NAME, "follow": "true"}
    params["tailLines"] = str(LOG_TAIL_LINES)
    said = ""
    while True:
        try:
            async for text in api.lines(path, params):
                await queue.put(LogLine(replica=label, text=text))
            params.pop("tailLines", None)
            params["sinceTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (StreamRefused, Unreachable) as exc:
            message = exc.message if isinstance(exc, StreamRefused) else str(exc)
            if message != said:  # say each different reason once
                said = message
                text = f"(taas dashboard: cannot read this log yet: {message}; retrying)"
                await queue.put(LogLine(replica=label, text=text))
        await asyncio.sleep(LOG_RETRY_SECONDS)
