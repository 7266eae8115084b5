"""One job page's objects from a cluster: its TFJob (by name), its pods (by the job-name label)
and its Events (by involvedObject), shared by every page showing the same job.

    watches = JobWatches(api, limit)
    watch = await watches.open(namespace, name)      # ActionError(429) past `limit` jobs
    await watches.release(watch)                     # the last page gone: watches stop
    watches.close()

Bounded: at most `limit` jobs are watched at once, and a job's pods and events are watched only
once its TFJob has been seen, so a page (or a script) asking for jobs that do not exist costs
one watch each, never three, and never more than `limit` in all.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from taas_operator.api.constants import LABEL_JOB_NAME
from taas_operator.api.resources import EVENT, POD, TFJOB
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.dashboard.board import JobWatch, Key
from taas_operator.dashboard.cluster.follow import REFUSED, list_watch
from taas_operator.dashboard.source import ActionError

#: How long a page's first answer waits for the TFJob's first list.
FIRST_LOOK_SECONDS = 5.0


class JobWatches:
    """The open job pages' watches, by (namespace, name)."""

    def __init__(self, api: KubeApi, limit: int) -> None:
        self.api, self.limit = api, limit
        self.watches: dict[Key, JobWatch] = {}

    async def open(self, namespace: str, name: str) -> JobWatch:
        key = (namespace, name)
        watch = self.watches.get(key)
        if watch is None:
            if len(self.watches) >= self.limit:
                raise ActionError(
                    429,
                    f"{len(self.watches)} job pages are open (the dashboard's limit): close "
                    f"some, then try again",
                )
            watch = self.watches[key] = JobWatch(namespace, name)
            loaded = asyncio.Event()
            watch.stop = [asyncio.create_task(self._follow_job(watch, loaded))]
            watch.users += 1
            try:  # a page cancelled during the first look releases the watch it started
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FIRST_LOOK_SECONDS):
                        await loaded.wait()
            except BaseException:
                await self.release(watch)
                raise
            return watch
        watch.users += 1
        return watch

    async def release(self, watch: JobWatch) -> None:
        watch.users -= 1
        if watch.users <= 0 and self.watches.get((watch.namespace, watch.name)) is watch:
            del self.watches[(watch.namespace, watch.name)]
            for task in watch.stop or []:
                task.cancel()

    def close(self) -> list[asyncio.Task[None]]:
        """Cancel every watch; the tasks, for the caller to await."""
        tasks = [t for w in self.watches.values() for t in (w.stop or [])]
        for task in tasks:
            task.cancel()
        self.watches.clear()
        return tasks

    async def _follow(
        self, watch: JobWatch, path: str, params: dict[str, str], what: str, apply: Any
    ) -> None:
        reset, change = apply

        def problem(text: str | None) -> None:
            watch.set_problem(what, text)

        try:
            await list_watch(self.api, path, params, reset, change, problem, what)
        except REFUSED as exc:
            watch.set_problem(
                what, f"You may not read {what} in namespace {watch.namespace}: {exc!s}"
            )
            if what == "this TFJob":
                watch.set_job(None)

    def _seen(self, watch: JobWatch, tfjob: dict[str, Any] | None) -> None:
        """The TFJob as listed or watched; its pods and events are followed once it exists."""
        watch.set_job(tfjob)
        if tfjob is not None and len(watch.stop or []) == 1:
            watch.stop.append(asyncio.create_task(self._follow_pods(watch)))
            watch.stop.append(asyncio.create_task(self._follow_events(watch)))

    async def _follow_job(self, watch: JobWatch, loaded: asyncio.Event) -> None:
        def reset(items: list[dict[str, Any]]) -> None:
            self._seen(watch, items[0] if items else None)
            loaded.set()

        def change(kind: str, obj: dict[str, Any]) -> None:
            self._seen(watch, None if kind == "DELETED" else obj)

        params = {"fieldSelector": f"metadata.name={watch.name}"}
        try:
            await self._follow(
                watch, TFJOB.path(watch.namespace), params, "this TFJob", (reset, change)
            )
        finally:
            loaded.set()

    async def _follow_pods(self, watch: JobWatch) -> None:
        def change(kind: str, obj: dict[str, Any]) -> None:
            if kind == "DELETED":
                watch.drop_pod(str((obj.get("metadata") or {}).get("name")))
            else:
                watch.set_pod(obj)

        params = {"labelSelector": f"{LABEL_JOB_NAME}={watch.name}"}
        path = POD.path(watch.namespace)
        await self._follow(watch, path, params, "its pods", (watch.set_pods, change))

    async def _follow_events(self, watch: JobWatch) -> None:
        def change(kind: str, obj: dict[str, Any]) -> None:
            if kind != "DELETED":
                watch.add_event(obj)

        params = {"fieldSelector": f"involvedObject.name={watch.name},involvedObject.kind=TFJob"}
        path = EVENT.path(watch.namespace)
        await self._follow(watch, path, params, "its events", (watch.set_events, change))
