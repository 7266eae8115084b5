"""The dashboard's jobs from a cluster: Kubernetes watches, as the user, nothing polled.

    ClusterSource.load(kubeconfig, context, namespaces=[])   # []: every namespace you may list

The jobs list is one list-then-watch of TFJobs: cluster-wide when the user may list them in
every namespace (`kubectl get tfjobs -A`), else one per namespace (`namespaces`, or the
context's), each refused namespace named on the page. A job page adds three watches while it is
open (the TFJob by name, its pods by the job-name label, its Events by involvedObject.name),
shared by every page showing the same job. Logs follow each replica's pod log
(`pods/log?follow=true`), merged with the `[worker-1]` prefixes `taas run` writes.

Outages: when the apiserver stops answering, each watch says so on the page (what, where, since
when) and retries with a back-off of 1 s doubling to 10 s; once it answers, the watch lists
again (so nothing changed meanwhile is missed) and the message goes away. A watch the apiserver
ended with 410 Gone lists again at once.

Permissions and actions: `permissions(ns)` asks the apiserver with SelfSubjectAccessReviews
(patch, delete, create on tfjobs.kubeflow.org); actions are the TFJob client's own calls
(`taas_operator.client`: suspend, resume, delete, create) as the user, and a refusal returns its
message, which carries the apiserver's words.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from taas_operator.api.constants import DEFAULT_CONTAINER_NAME, GROUP, LABEL_JOB_NAME, PLURAL
from taas_operator.client.jobs import TFJobClient
from taas_operator.dashboard.board import JobWatch, Key, key_of
from taas_operator.dashboard.kubeapi import KubeApi, StreamRefused, Unreachable
from taas_operator.dashboard.source import (
    ActionError,
    LogLine,
    Permission,
    Permissions,
    Source,
    short_name,
)

TFJOBS = f"/apis/{GROUP}/v1"
RETRY_START, RETRY_MAX = 1.0, 10.0
LIST_PAGE = 500
LOG_TAIL_LINES = 500
LOG_RETRY_SECONDS = 3.0

Reset = Callable[[list[dict[str, Any]]], None]
Change = Callable[[str, dict[str, Any]], None]
Problem = Callable[[str | None], None]


class Refused(Exception):
    """The apiserver refused a list (403 and the like): retrying will not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def tfjobs_path(namespace: str | None, name: str = "") -> str:
    base = f"{TFJOBS}/namespaces/{namespace}/{PLURAL}" if namespace else f"{TFJOBS}/{PLURAL}"
    return f"{base}/{name}" if name else base


def _clock() -> str:
    return datetime.now(UTC).astimezone().strftime("%H:%M:%S")


async def list_watch(
    api: KubeApi,
    path: str,
    params: dict[str, str],
    reset: Reset,
    change: Change,
    problem: Problem,
    what: str,
) -> None:
    """List `path`, then follow its watch for ever: `reset(items)` after each list,
    `change(type, object)` per event, `problem(text or None)` on outages. Raises Refused."""
    delay = RETRY_START
    since: str | None = None
    while True:
        try:
            items, version = await _list_all(api, path, params)
            reset(items)
            if since is not None:
                problem(None)
                since = None
            delay = RETRY_START
            while version:
                version = await _watch_once(api, path, params, version, change)
        except Unreachable as exc:
            since = since or _clock()
            problem(
                f"The apiserver at {api.server} is not answering ({exc}) since {since}: "
                f"{what} may be out of date. Retrying every {int(RETRY_MAX)} s; this page "
                f"catches up by itself."
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)


async def _list_all(
    api: KubeApi, path: str, params: dict[str, str]
) -> tuple[list[dict[str, Any]], str]:
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {**params, "limit": str(LIST_PAGE)}
        if token:
            query["continue"] = token
        status, data = await api.request("GET", path, params=query)
        if status in (401, 403, 404):
            message = data.get("message", "") if isinstance(data, dict) else str(data)
            raise Refused(status, message)
        if status != 200 or not isinstance(data, dict):
            raise Unreachable(f"HTTP {status} listing {path}")
        items += data.get("items") or []
        token = (data.get("metadata") or {}).get("continue") or ""
        if not token:
            return items, str((data.get("metadata") or {}).get("resourceVersion") or "")


async def _watch_once(
    api: KubeApi, path: str, params: dict[str, str], version: str, change: Change
) -> str:
    """Follow one watch; the resourceVersion to resume from, or "" to list again (410)."""
    async for event in api.watch(path, {**params, "resourceVersion": version}):
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            return "" if obj.get("code") == 410 else version
        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            change(str(kind), obj)
    return version


class ClusterSource(Source):
    """TFJobs, pods, events and logs of a cluster, seen as the kubeconfig's user."""

    mode = "cluster"

    def __init__(
        self, api: KubeApi, client: TFJobClient, namespaces: list[str] | None = None
    ) -> None:
        super().__init__()
        self.api, self.client = api, client
        self.namespaces = list(namespaces or [])
        self.tasks: list[asyncio.Task[None]] = []
        self.watches: dict[Key, JobWatch] = {}
        self.scopes: dict[str | None, set[Key]] = {}
        self.problems: dict[str | None, str] = {}
        self.refused: dict[str, str] = {}
        self.scope_note = ""

    @classmethod
    def load(
        cls, kubeconfig: str | None, context: str | None, namespaces: list[str] | None = None
    ) -> ClusterSource:
        """As kubectl would connect; InputError naming the fix when the kubeconfig is unusable."""
        api = KubeApi.load(kubeconfig, context)
        return cls(api, TFJobClient(kubeconfig, context), namespaces)

    # -- the jobs list -------------------------------------------------------------------------
    async def start(self) -> None:
        await self.api.who_am_i()
        self.tasks.append(asyncio.create_task(self._follow_jobs()))

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for watch in self.watches.values():
            for task in watch.stop or []:
                task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.api.close()

    async def _follow_jobs(self) -> None:
        scopes: list[str | None] = list(self.namespaces)
        if not scopes:
            status = await self._retrying(lambda: self._can_list_everywhere())
            if status:
                scopes = [None]
            else:
                scopes = [self.api.namespace]
                self.scope_note = (
                    f"You may not list TFJobs in every namespace (kubectl get tfjobs -A would "
                    f"be refused): showing namespace {self.api.namespace}. Choose others with "
                    f"taas dashboard -n NAMESPACE."
                )
                self._notes()
        await asyncio.gather(*(self._follow_scope(s) for s in scopes))

    async def _retrying(self, call: Callable[[], Awaitable[bool]]) -> bool:
        delay = RETRY_START
        while True:
            try:
                result = await call()
                self.board.set_problem(None)
                return result
            except Unreachable as exc:
                self.board.set_problem(
                    f"The apiserver at {self.api.server} is not answering ({exc}); retrying."
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    async def _can_list_everywhere(self) -> bool:
        status, _ = await self.api.request("GET", tfjobs_path(None), params={"limit": "1"})
        return status == 200

    async def _follow_scope(self, namespace: str | None) -> None:
        self.scopes[namespace] = set()

        def reset(items: list[dict[str, Any]]) -> None:
            keys = {key_of(i) for i in items}
            for key in self.scopes[namespace] - keys:
                self.board.remove(*key)
            self.scopes[namespace] = keys
            for item in items:
                self.board.upsert(item)
            self.board.synced = True
            self.board.set_notes(self._note_lines())

        def change(kind: str, obj: dict[str, Any]) -> None:
            key = key_of(obj)
            if kind == "DELETED":
                self.scopes[namespace].discard(key)
                self.board.remove(*key)
            else:
                self.scopes[namespace].add(key)
                self.board.upsert(obj)

        def problem(text: str | None) -> None:
            if text is None:
                self.problems.pop(namespace, None)
            else:
                self.problems[namespace] = text
            self.board.set_problem(next(iter(self.problems.values()), None))

        try:
            await list_watch(
                self.api, tfjobs_path(namespace), {}, reset, change, problem, "the jobs list"
            )
        except Refused as exc:
            where = namespace or "every namespace"
            self.refused[where] = exc.message
            self.board.synced = True
            self._notes()

    def _note_lines(self) -> list[str]:
        notes = [self.scope_note] if self.scope_note else []
        notes += [
            f"Namespace {ns}: you may not list TFJobs there ({why})."
            for ns, why in self.refused.items()
        ]
        return notes

    def _notes(self) -> None:
        self.board.set_notes(self._note_lines())

    # -- one job -------------------------------------------------------------------------------
    async def open_job(self, namespace: str, name: str) -> JobWatch:
        key = (namespace, name)
        watch = self.watches.get(key)
        if watch is None:
            watch = self.watches[key] = JobWatch(namespace, name)
            loaded = asyncio.Event()
            watch.stop = [
                asyncio.create_task(self._follow_job(watch, loaded)),
                asyncio.create_task(self._follow_pods(watch)),
                asyncio.create_task(self._follow_events(watch)),
            ]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(loaded.wait(), 5)
        watch.users += 1
        return watch

    async def release_job(self, watch: JobWatch) -> None:
        watch.users -= 1
        if watch.users <= 0 and self.watches.get((watch.namespace, watch.name)) is watch:
            del self.watches[(watch.namespace, watch.name)]
            for task in watch.stop or []:
                task.cancel()

    async def _follow(
        self, watch: JobWatch, path: str, params: dict[str, str], what: str, apply: Any
    ) -> None:
        reset, change = apply

        def problem(text: str | None) -> None:
            watch.set_problem(what, text)

        try:
            await list_watch(self.api, path, params, reset, change, problem, what)
        except Refused as exc:
            watch.set_problem(
                what, f"You may not read {what} in namespace {watch.namespace}: {exc.message}"
            )
            if what == "this TFJob":
                watch.set_job(None)

    async def _follow_job(self, watch: JobWatch, loaded: asyncio.Event) -> None:
        def reset(items: list[dict[str, Any]]) -> None:
            watch.set_job(items[0] if items else None)
            loaded.set()

        def change(kind: str, obj: dict[str, Any]) -> None:
            watch.set_job(None if kind == "DELETED" else obj)

        params = {"fieldSelector": f"metadata.name={watch.name}"}
        path = tfjobs_path(watch.namespace)
        try:
            await self._follow(watch, path, params, "this TFJob", (reset, change))
        finally:
            loaded.set()

    async def _follow_pods(self, watch: JobWatch) -> None:
        def change(kind: str, obj: dict[str, Any]) -> None:
            if kind == "DELETED":
                watch.drop_pod(str((obj.get("metadata") or {}).get("name")))
            else:
                watch.set_pod(obj)

        path = f"/api/v1/namespaces/{watch.namespace}/pods"
        params = {"labelSelector": f"{LABEL_JOB_NAME}={watch.name}"}
        await self._follow(watch, path, params, "its pods", (watch.set_pods, change))

    async def _follow_events(self, watch: JobWatch) -> None:
        def change(kind: str, obj: dict[str, Any]) -> None:
            if kind != "DELETED":
                watch.add_event(obj)

        path = f"/api/v1/namespaces/{watch.namespace}/events"
        params = {"fieldSelector": f"involvedObject.name={watch.name},involvedObject.kind=TFJob"}
        await self._follow(watch, path, params, "its events", (watch.set_events, change))

    # -- logs ----------------------------------------------------------------------------------
    async def logs(self, namespace: str, name: str, replica: str | None) -> AsyncIterator[LogLine]:
        path = f"/api/v1/namespaces/{namespace}/pods"
        try:
            pods, _ = await _list_all(self.api, path, {"labelSelector": f"{LABEL_JOB_NAME}={name}"})
        except Refused as exc:
            message = f"You may not list pods in {namespace}: {exc.message}"
            raise ActionError(exc.status, message) from None
        except Unreachable as exc:
            message = f"The apiserver at {self.api.server} is not answering: {exc}"
            raise ActionError(503, message) from None
        names = sorted(str(p["metadata"]["name"]) for p in pods)
        names = [n for n in names if replica in (None, short_name(name, n))]
        if not names:
            raise ActionError(404, f"no pod of TFJob {namespace}/{name} to read logs from yet")
        queue: asyncio.Queue[LogLine] = asyncio.Queue(maxsize=5000)
        tasks = [asyncio.create_task(self._pod_log(namespace, name, n, queue)) for n in names]
        try:
            while True:
                yield await queue.get()
        finally:
            for task in tasks:
                task.cancel()

    async def _pod_log(
        self, namespace: str, job: str, pod: str, queue: asyncio.Queue[LogLine]
    ) -> None:
        label = short_name(job, pod)
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
        params = {"container": DEFAULT_CONTAINER_NAME, "follow": "true"}
        params["tailLines"] = str(LOG_TAIL_LINES)
        said = ""
        while True:
            try:
                async for text in self.api.lines(path, params):
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

    # -- permissions and actions ---------------------------------------------------------------
    async def _allowed(self, verb: str, namespace: str) -> Permission:
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": verb,
                    "group": GROUP,
                    "resource": PLURAL,
                }
            },
        }
        path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        try:
            status, data = await self.api.request("POST", path, body=review)
        except Unreachable as exc:
            return Permission(allowed=False, reason=f"the apiserver is not answering ({exc})")
        if status != 201 or not isinstance(data, dict):
            return Permission(allowed=False, reason=f"the apiserver could not say (HTTP {status})")
        result = data.get("status") or {}
        if result.get("allowed"):
            return Permission(allowed=True)
        who = self.api.user or "you"
        return Permission(
            allowed=False,
            reason=f"{who} may not {verb} tfjobs.{GROUP} in namespace {namespace} (RBAC)",
        )

    async def permissions(self, namespace: str) -> Permissions:
        patch, delete, create = await asyncio.gather(
            self._allowed("patch", namespace),
            self._allowed("delete", namespace),
            self._allowed("create", namespace),
        )
        return Permissions(suspend=patch, delete=delete, create=create)

    async def _act(self, call: Callable[[], Any]) -> Any:
        """An action through the TFJob client (in a thread: its calls block), its errors as
        the HTTP status the page gets and the client's message (the apiserver's words)."""
        from taas_operator.client import errors

        statuses: list[tuple[type[Exception], int]] = [
            (errors.Forbidden, 403),
            (errors.JobNotFound, 404),
            (errors.AlreadyExists, 409),
            (errors.Invalid, 422),
            (errors.Unreachable, 503),
            (errors.ClientError, 500),
        ]
        try:
            return await asyncio.to_thread(call)
        except errors.ClientError as exc:
            status = next(code for kind, code in statuses if isinstance(exc, kind))
            raise ActionError(status, str(exc)) from None

    async def set_suspend(self, namespace: str, name: str, suspend: bool) -> None:
        act = self.client.suspend if suspend else self.client.resume
        await self._act(lambda: act(name, namespace))

    async def delete(self, namespace: str, name: str) -> None:
        await self._act(lambda: self.client.delete(name, namespace))

    async def create(self, manifest: dict[str, Any]) -> tuple[str, str]:
        namespace = str(manifest["metadata"].get("namespace") or self.api.namespace)
        made = await self._act(lambda: self.client.create(manifest, namespace))
        return made.namespace, made.name

    def info(self) -> dict[str, Any]:
        context = f" · context {self.api.context_name}" if self.api.context_name else ""
        user = f" · {self.api.user}" if self.api.user else ""
        return {
            "mode": self.mode,
            "where": f"{self.api.server}{context}{user}",
            "readOnly": False,
            "defaultNamespace": self.namespaces[0] if self.namespaces else self.api.namespace,
            "since": time.time(),
        }
