"""Asynchronous access as one person (the dashboard's): requests, watches and log streams on
the transport, with the user's own kubeconfig identity, answers returned for the caller to judge.

    api = KubeApi.of(connection)                          # a blocking.Connection's identity
    await api.request(method, path, params=..., body=..., content_type=...) -> (status, data)
    async for event in api.watch(path, params): ...        # {"type": ..., "object": ...}
    async for line in api.lines(path, params): ...         # a followed pod log
    await api.close()

Why not the TFJob client's blocking calls: a web server follows many streams at once (the jobs
list, each open page's pods and events, a log per replica); aiohttp (already installed: kopf
uses it) streams them all on one event loop, where blocking calls would hold a thread each. The
identity is the one loader's (`credentials.load`, as kubectl finds it), the same as the TFJob
client's, and every request is made as that user: the apiserver's RBAC decides what the page
may show and do.

Connections: requests and streams have separate pools (`REQUEST_CONNECTIONS`,
`STREAM_CONNECTIONS`, the transport's), so however many watches and logs are open, a permission
check or an action still gets a connection (the streams themselves are capped by the server and
the source).

Errors: `errors.Unreachable` when the apiserver cannot be reached (the page says so and the
callers retry); a refused log stream raises `errors.refused`'s error (the server's words); any
other answer is returned with its status for the caller to judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson

from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.errors import Request, Unreachable, reason, refused
from taas_operator.apiserver.transport import StreamError, Transport

#: A watch is re-opened at least this often (the apiserver also ends watches by itself).
WATCH_SECONDS = 240
REQUEST_CONNECTIONS, STREAM_CONNECTIONS = 32, 400
REQUEST_SECONDS = 30.0
SELF_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SELF_REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
_UNREACHABLE = (aiohttp.ClientError, TimeoutError, OSError)


class KubeApi:
    """Requests and streams as one kubeconfig user."""

    def __init__(self, connection: Connection, user: str = "") -> None:
        self.context_name, self.user = connection.context, user
        self.server = connection.server
        self.namespace = connection.namespace
        endpoint = connection.credentials.endpoint
        self.transport = Transport(endpoint, REQUEST_CONNECTIONS, STREAM_CONNECTIONS)

    @classmethod
    def of(cls, connection: Connection) -> KubeApi:
        """Requests with `connection`'s server, CA and credentials."""
        return cls(connection)

    async def identify(self) -> tuple[int, str, str]:
        """(SelfSubjectReview's HTTP status, the user name and uid the apiserver sees); status 0:
        unreachable."""
        try:
            status, data = await self.request("POST", SELF_REVIEWS, body=SELF_REVIEW)
        except Unreachable:
            return 0, "", ""
        uid = ""
        if status == 201 and isinstance(data, dict):
            info = (data.get("status") or {}).get("userInfo") or {}
            self.user, uid = str(info.get("username", "")), str(info.get("uid", ""))
        return status, self.user, uid

    async def who_am_i(self) -> str:
        """The user name the apiserver sees (SelfSubjectReview), "" when it cannot say."""
        return (await self.identify())[1]

    async def close(self) -> None:
        await self.transport.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """One call; (status, decoded JSON or text). Raises Unreachable."""
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancellation
            # that meets the answer (bpo-42130), and a cancelled caller then runs on.
            async with asyncio.timeout(REQUEST_SECONDS):
                return await self.transport.call(method, path, params, body, content_type)
        except _UNREACHABLE as exc:
            raise Unreachable(reason(exc)) from None

    async def watch(self, path: str, params: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
        """The watch events of `path` until the server ends the watch. A refused watch yields
        one {"type": "ERROR", "object": Status}. Raises Unreachable."""
        query = {**params, "watch": "1", "timeoutSeconds": str(WATCH_SECONDS)}
        query["allowWatchBookmarks"] = "true"
        try:
            async for event in self.transport.stream(path, query):
                yield event
        except StreamError as exc:
            yield {"type": "ERROR", "object": _status_object(exc.status, exc.message)}
        except _UNREACHABLE as exc:
            raise Unreachable(reason(exc)) from None

    async def lines(self, path: str, params: dict[str, str]) -> AsyncIterator[str]:
        """A text stream (a followed log), line by line. A refusal raises the `ApiError` of
        its status (`errors.refused`: the server's words)."""
        try:
            async for line in self.transport.lines(path, params):
                yield line
        except StreamError as exc:
            raise refused(exc.status, exc.message, Request("get", path)) from None
        except _UNREACHABLE as exc:
            raise Unreachable(reason(exc)) from None


def _status_object(status: int, text: str) -> dict[str, Any]:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and data.get("kind") == "Status":
        return data
    return {"kind": "Status", "code": status, "message": text.strip()[:500]}
