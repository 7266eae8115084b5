"""HTTP to the apiserver on the operator's own event loop (aiohttp, the client kopf uses too).

    transport = Transport(Endpoint(host=..., ca_file=..., ...), concurrency=16)
    await transport.call(method, path, query=None, body=None, content_type=...) -> (status, data)
    async for event in transport.stream(path, query): ...   # a watch, line by line
    await transport.close()

One keep-alive connection pool per process, opened on the first call (inside the running loop),
at most `concurrency` requests in flight. Bodies go out as JSON bytes, answers come back parsed
(orjson: a restart parses every object of every watched kind once, json's time was a third of
it).
Why not the official client's urllib3 pool: it blocks, so every call needed a worker thread;
the thread hand-offs, GIL contention and urllib3's per-request work cost about twice the CPU of
an aiohttp request (the operator benchmark's profile). A request whose connection drops before
an answer (a keep-alive connection the server had just closed) is sent once more: every write
of the operator is safe to repeat (a create finds its name taken, a status write a Conflict, a
delete a 404, an event is at worst posted twice).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Endpoint:
    """Where the apiserver is and how to prove who we are (plain values from a kubeconfig or
    the in-cluster service account)."""

    host: str
    ca_file: str | None = None
    ca_data: str | None = None
    verify: bool = True
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    proxy: str | None = None
    #: The Authorization header value (or None), asked before every request: rotated
    #: service-account tokens and exec plugins refresh there.
    authorization: Callable[[], str | None] = lambda: None

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context


class Transport:
    """A pooled aiohttp session to one apiserver."""

    def __init__(self, endpoint: Endpoint, concurrency: int) -> None:
        self.endpoint = endpoint
        self.concurrency = concurrency
        self._ssl = endpoint.ssl_context() if endpoint.host.startswith("https") else None
        self._session: aiohttp.ClientSession | None = None
        self._streams: aiohttp.ClientSession | None = None
        self._limit: asyncio.Semaphore | None = None

    def _open_streams(self) -> aiohttp.ClientSession:
        """Watches hold their connection for minutes: their own pool, no read timeout (the
        server ends each watch after its timeoutSeconds), not counted in `concurrency`."""
        if self._streams is None or self._streams.closed:
            self._streams = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl or False, limit=0),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT_S),
            )
        return self._streams

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[Any]:
        """GET a watch: each line of the answer parsed as JSON, until the server ends it.
        A non-2xx answer raises `StreamError` with the status and the server's message."""
        headers = {"Accept": "application/json"}
        auth = self.endpoint.authorization()
        if auth:
            headers["Authorization"] = auth
        async with self._open_streams().get(
            self.endpoint.host + path,
            params=query,
            headers=headers,
            proxy=self.endpoint.proxy,
            server_hostname=self.endpoint.server_name,
        ) as response:
            if response.status >= 300:
                raw = await response.read()
                raise StreamError(response.status, raw.decode(errors="replace")[:500])
            async for line in response.content:
                if line.strip():
                    yield orjson.loads(line)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl or False, limit=self.concurrency)
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(
                    sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S
                ),
            )
            self._limit = asyncio.Semaphore(self.concurrency)
        return self._session

    async def call(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """Send one request; the status code and the parsed JSON answer (None when empty)."""
        session = self._open()
        assert self._limit is not None
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = orjson.dumps(body)
            headers["Content-Type"] = content_type
        async with self._limit:
            for attempt in (1, 2):
                auth = self.endpoint.authorization()
                if auth:
                    headers["Authorization"] = auth
                try:
                    async with session.request(
                        method,
                        self.endpoint.host + path,
                        params=query,
                        data=data,
                        headers=headers,
                        proxy=self.endpoint.proxy,
                        server_hostname=self.endpoint.server_name,
                    ) as response:
                        raw = await response.read()
                        return response.status, _parsed(response.status, raw)
                except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    async def close(self) -> None:
        for session in (self._session, self._streams):
            if session is not None:
                await session.close()
        self._session = self._streams = None


def _parsed(status: int, raw: bytes) -> Any:
    """The JSON answer (None when empty). An error answer that is not JSON, such as the
    apiserver's plain `404 page not found` for a resource no installed CRD serves, becomes its
    text, so the caller raises an ApiError naming it instead of failing to parse."""
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if 200 <= status < 300:
            raise
        return raw.decode(errors="replace").strip()


class StreamError(Exception):
    """A watch request answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"HTTP {status}: {message}")
