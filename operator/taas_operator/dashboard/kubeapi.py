"""The dashboard's asynchronous access to the apiserver: requests, watches and log streams on
the one apiserver client (`apiserver.transport`), with the user's own kubeconfig identity.

    api = KubeApi.load(kubeconfig=None, context=None)     # InputError on a broken kubeconfig
    api = KubeApi.of(connection)                          # a client.kube.Connection's identity
    await api.request(method, path, params=..., body=..., content_type=...) -> (status, data)
    async for event in api.watch(path, params): ...        # {"type": ..., "object": ...}
    async for line in api.lines(path, params): ...         # a followed pod log
    await api.close()

Why not the TFJob client's blocking calls: a web server follows many streams at once (the jobs
list, each open page's pods and events, a log per replica); aiohttp (already installed: kopf
uses it) streams them all on one event loop, where blocking calls would hold a thread each. The
kubeconfig is read by the TFJob client's `Connection` (`taas_operator.client.kube`, the official
loader: contexts, client certificates, tokens, exec plugins), so the identity is exactly
kubectl's, and every request is made as that user: the apiserver's RBAC decides what the page
may show and do.

Connections: requests and streams have separate pools (`REQUEST_CONNECTIONS`,
`STREAM_CONNECTIONS`, the transport's), so however many watches and logs are open, a permission
check or an action still gets a connection (the streams themselves are capped by the server and
the source).

Errors: `Unreachable` when the apiserver cannot be reached (the page says so and the callers
retry); any other answer is returned with its status for the caller to judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson

from taas_operator.apiserver.transport import StreamError, Transport, endpoint
from taas_operator.client.errors import ConfigError
from taas_operator.client.kube import Connection
from taas_operator.documents import InputError

#: A watch is re-opened at least this often (the apiserver also ends watches by itself).
WATCH_SECONDS = 240
REQUEST_CONNECTIONS, STREAM_CONNECTIONS = 32, 400
REQUEST_SECONDS = 30.0
SELF_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SELF_REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
_UNREACHABLE = (aiohttp.ClientError, TimeoutError, OSError)


class Unreachable(Exception):
    """The apiserver did not answer (refused, reset, timed out)."""


class KubeApi:
    """Requests and streams as one kubeconfig user."""

    def __init__(self, config: Any, context: str = "", user: str = "") -> None:
        self.config, self.context_name, self.user = config, context, user
        self.server = str(config.host).rstrip("/")
        self.namespace = "default"
        self.transport = Transport(endpoint(config), REQUEST_CONNECTIONS, STREAM_CONNECTIONS)

    @staticmethod
    def connect(kubeconfig: str | None = None, context: str | None = None) -> Connection:
        """The identity the TFJob client finds, as kubectl does (--kubeconfig, $KUBECONFIG,
        ~/.kube/config, else the pod's service account; --context or the current one)."""
        try:
            return Connection(kubeconfig, context)
        except ConfigError as exc:
            raise InputError(str(exc)) from None

    @classmethod
    def load(cls, kubeconfig: str | None = None, context: str | None = None) -> KubeApi:
        """`connect`, as a KubeApi."""
        return cls.of(cls.connect(kubeconfig, context))

    @classmethod
    def of(cls, connection: Connection) -> KubeApi:
        """Requests with `connection`'s server, CA and credentials."""
        api = cls(connection.configuration, connection.context)
        api.namespace = connection.namespace
        return api

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
            call = self.transport.call(method, path, params, body, content_type)
            return await asyncio.wait_for(call, REQUEST_SECONDS)
        except _UNREACHABLE as exc:
            raise Unreachable(_why(exc)) from None

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
            raise Unreachable(_why(exc)) from None

    async def lines(self, path: str, params: dict[str, str]) -> AsyncIterator[str]:
        """A text stream (a followed log), line by line. A refusal raises StreamRefused."""
        try:
            async for line in self.transport.lines(path, params):
                yield line
        except StreamError as exc:
            message = _status_object(exc.status, exc.message).get("message", exc.message)
            raise StreamRefused(exc.status, str(message)) from None
        except _UNREACHABLE as exc:
            raise Unreachable(_why(exc)) from None


class StreamRefused(Exception):
    """A stream the apiserver answered with an error (e.g. a log of a pod not started)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _status_object(status: int, text: str) -> dict[str, Any]:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and data.get("kind") == "Status":
        return data
    return {"kind": "Status", "code": status, "message": text.strip()[:500]}


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.split(" [")[0] if "Cannot connect" in text else text
