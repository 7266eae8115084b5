"""HTTP to the apiserver on the caller's event loop (aiohttp, the client kopf uses too): what
every request of the package (`verbs`, `kubeapi`, `blocking`, `listwatch`'s callers) goes out on.

    transport = Transport(credentials.load(...).endpoint, concurrency=16, streams=0)
    await transport.call(method, path, query=None, body=None, content_type=...) -> (status, data)
    async with transport.forward(method, path, query, headers, body) as response: ...  # raw
    async for event in transport.stream(path, query): ...   # a watch, line by line
    async for line in transport.lines(path, query): ...     # a text stream (a followed log)
    async with transport.open_lines(path, query) as lines: ...  # the same, accepted first
    # a line longer than MAX_LINE_BYTES (3 MiB) raises LineTooLong; CUT: a stream cut short
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
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import yarl

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
#: The longest line a stream may send: a watch event holds one object, and the apiserver stores
#: objects up to etcd's request limit (1.5 MiB), written as JSON again (escapes can grow it);
#: aiohttp's own readline stops at 512 KiB (`LineTooLong`).
MAX_LINE_BYTES = 3 * 1024 * 1024
#: Errors of a stream that was cut (the apiserver restarting, a connection reset): nothing was
#: misread, so a watch may go on from the last version it saw.
CUT: tuple[type[BaseException], ...] = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    TimeoutError,
    ConnectionError,
)


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


def endpoint(config: Any) -> Endpoint:
    """The apiserver and credentials of a loaded kubernetes client `Configuration`, as plain
    values (read by attribute: only `credentials` imports the official client)."""

    def authorization() -> str | None:
        # Also runs the loader's refresh hook (rotated service-account tokens, exec plugins).
        value = config.get_api_key_with_prefix("BearerToken", alias="authorization")
        return str(value) if value else None

    return Endpoint(
        host=str(config.host).rstrip("/"),
        ca_file=config.ssl_ca_cert,
        ca_data=getattr(config, "ca_cert_data", None),
        verify=config.verify_ssl,
        cert_file=config.cert_file,
        key_file=config.key_file,
        server_name=getattr(config, "tls_server_name", None),
        proxy=config.proxy,
        authorization=authorization,
    )


class Transport:
    """A pooled aiohttp session to one apiserver (and one for streams)."""

    def __init__(self, endpoint: Endpoint, concurrency: int, streams: int = 0) -> None:
        """`concurrency`: requests in flight at most; `streams`: open streams at most (0: no
        limit), each with a connection of its own, so streams never take a request's place."""
        self.endpoint = endpoint
        self.concurrency = concurrency
        self.streams = streams
        self._ssl = endpoint.ssl_context() if endpoint.host.startswith("https") else None
        self._session: aiohttp.ClientSession | None = None
        self._streams: aiohttp.ClientSession | None = None
        self._limit: asyncio.Semaphore | None = None

    def _open_streams(self) -> aiohttp.ClientSession:
        """Watches hold their connection for minutes: their own pool, no read timeout (the
        server ends each watch after its timeoutSeconds), not counted in `concurrency`."""
        if self._streams is None or self._streams.closed:
            self._streams = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl or False, limit=self.streams),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT_S),
            )
        return self._streams

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[Any]:
        """GET a watch: each line of the answer parsed as JSON, until the server ends it.
        A non-2xx answer raises `StreamError` with the status and the server's message."""
        async for line in self.lines(path, query):
            if line.strip():
                yield orjson.loads(line)

    async def lines(self, path: str, query: dict[str, str]) -> AsyncIterator[str]:
        """GET a stream (a watch, a followed log): its lines as text, until the server ends
        it. A non-2xx answer raises `StreamError` with the status and the server's message."""
        async with self.open_lines(path, query) as lines:
            async for line in lines:
                yield line

    @contextlib.asynccontextmanager
    async def open_lines(
        self, path: str, query: dict[str, str]
    ) -> AsyncIterator[AsyncIterator[str]]:
        """`lines`, in two steps: entering sends the GET and raises `StreamError` for a
        non-2xx answer (so a caller knows the stream was accepted before any line comes);
        the value is the lines as text."""
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
            yield _text_lines(response)

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

    @contextlib.asynccontextmanager
    async def forward(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Send one request as given (the caller's raw body and headers, with this transport's
        credentials) and hand over the answer unread, for a proxy to stream on (`taas
        tensorboard` through the apiserver's service proxy). `path` is used as it is written
        (already escaped), `query` is the raw query string."""
        session = self._open()
        assert self._limit is not None
        sent = dict(headers)
        auth = self.endpoint.authorization()
        if auth:
            sent["Authorization"] = auth
        url = yarl.URL(self.endpoint.host + path + (f"?{query}" if query else ""), encoded=True)
        async with (
            self._limit,
            session.request(
                method,
                url,
                data=body,
                headers=sent,
                proxy=self.endpoint.proxy,
                server_hostname=self.endpoint.server_name,
                allow_redirects=False,
            ) as response,
        ):
            yield response

    async def close(self) -> None:
        for session in (self._session, self._streams):
            if session is not None:
                await session.close()
        self._session = self._streams = None


async def bounded_lines(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    """The lines of a byte stream, without their newline (the last one also unended); a line
    longer than `limit` bytes raises `LineTooLong` (memory stays bounded by `limit`)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            size += end - start
            if size > limit:
                raise LineTooLong(limit)
            parts.append(chunk[start:end])
            yield b"".join(parts)
            parts, size, start = [], 0, end + 1
        if start < len(chunk):
            size += len(chunk) - start
            if size > limit:
                raise LineTooLong(limit)
            parts.append(chunk[start:])
    if parts:
        yield b"".join(parts)


async def _text_lines(response: aiohttp.ClientResponse) -> AsyncIterator[str]:
    async for raw in bounded_lines(response.content.iter_any(), MAX_LINE_BYTES):
        yield raw.decode("utf-8", errors="replace").rstrip("\r")


def _parsed(status: int, raw: bytes) -> Any:
    """The JSON answer (None when empty). An error answer that is not JSON, such as the
    apiserver's plain `404 page not found` for a resource no installed CRD serves, becomes its
    text, so the caller can name it instead of failing to parse."""
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if 200 <= status < 300:
            raise
        return raw.decode(errors="replace").strip()


class LineTooLong(Exception):
    """A stream sent a line longer than the bound (`MAX_LINE_BYTES`): its reader gives up."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"a line of the stream is longer than {limit} bytes")


class StreamError(Exception):
    """A stream request answered with an error status (`message`: the server's words)."""

    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message
        super().__init__(f"HTTP {status}: {message}")
