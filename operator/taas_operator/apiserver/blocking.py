"""The apiserver for blocking callers (the TFJob client, the `taas` commands): the same
transport and errors as the operator's, run on a private event loop in a daemon thread.

    conn = Connection.load(kubeconfig=None, context=None)   # ConfigError when unusable
    conn.with_token(token) -> Connection                    # same cluster, a token's identity
    conn.namespace, conn.server, conn.context, conn.source  # the context's namespace ("default")
    conn.call(request, method, path, query=None, body=None, content_type=...) -> data
    conn.log_stream(request, path, query) -> LineStream     # iterate lines; .close()
    conn.run(coroutine) -> result                            # any coroutine on the private loop
    conn.submit(coroutine) -> concurrent.futures.Future      # the same, not waited for
    apart = Apart(coroutine); apart.done(); apart.stop()     # on a loop of its own (a watch)
    conn.transport() -> Transport                            # for a caller's own event loop

Every call's failure is an `errors.ApiError` in a person's words (`errors.user_error`; no answer
at all: `Unreachable`). One loop thread serves every connection of the process (started on
first use); each connection keeps its own pool on it, closed when the connection is dropped,
or at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import queue
import threading
import weakref
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import aiohttp

from taas_operator.apiserver.credentials import Credentials, load
from taas_operator.apiserver.errors import (
    ApiError,
    Request,
    unreachable,
    user_error,
)
from taas_operator.apiserver.transport import StreamError, Transport

T = TypeVar("T")
#: What a request that got no answer raises (a refused or reset connection, a timeout).
NO_ANSWER = (aiohttp.ClientError, TimeoutError, OSError)
#: Lines a log stream holds for a slow reader, at most.
LINES_HELD = 1000
CONCURRENCY, STREAMS = 8, 64


class _Loop:
    """The process's one private event loop, in a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.transports: weakref.WeakSet[Transport] = weakref.WeakSet()

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True, name="taas-kube").start()
                self._loop = loop
                atexit.register(self.close)
            return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.get())

    def close(self) -> None:
        """Close every pool (no "unclosed session" warnings at exit)."""
        if self._loop is None or not self._loop.is_running():
            return
        with contextlib.suppress(Exception):
            self.submit(_close_all(list(self.transports))).result(timeout=2)

    def close_soon(self, transport: Transport) -> None:
        """Close `transport`'s pool on the loop, without waiting."""
        if self._loop is not None and self._loop.is_running():
            self.submit(transport.close())


async def _close_all(transports: list[Transport]) -> None:
    await asyncio.gather(*(t.close() for t in transports), return_exceptions=True)


_LOOP = _Loop()


class Connection:
    """One apiserver and identity, for blocking callers (see the module)."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self.namespace, self.context = credentials.namespace, credentials.context
        self.server, self.source = credentials.server, credentials.source
        self._transport = Transport(credentials.endpoint, CONCURRENCY, STREAMS)
        _LOOP.transports.add(self._transport)
        # A connection dropped (a dashboard viewer's, say) closes its pool on the loop.
        weakref.finalize(self, _LOOP.close_soon, self._transport).atexit = False

    @classmethod
    def load(cls, kubeconfig: str | None = None, context: str | None = None) -> Connection:
        """The identity kubectl would use (`credentials.load`)."""
        return cls(load(kubeconfig, context))

    def with_token(self, token: str) -> Connection:
        """The same server and CA, authenticated by `token` alone (`Credentials.with_token`)."""
        return Connection(self.credentials.with_token(token))

    def transport(self) -> Transport:
        """A transport of this server and identity for the caller's own event loop (open
        and close it there)."""
        return Transport(self.credentials.endpoint, concurrency=4, streams=4)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the private loop; its result (or its exception)."""
        return _LOOP.submit(coroutine).result()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start `coroutine` on the private loop; cancelling the future cancels it."""
        return _LOOP.submit(coroutine)

    def refusal(self, status: int, data: Any, request: Request) -> ApiError:
        """The error for an error answer to `request` (a person's words)."""
        return user_error(status, data, request, self.server, self.source)

    def no_answer(self, error: BaseException) -> ApiError:
        """The error for a request that got no answer."""
        return unreachable(error, self.server, self.source)

    def call(
        self,
        request: Request,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request; the parsed answer. A refusal raises its `ApiError`."""
        try:
            status, data = self.run(self._transport.call(method, path, query, body, content_type))
        except NO_ANSWER as err:
            raise self.no_answer(err) from None
        if not 200 <= status < 300:
            raise self.refusal(status, data, request)
        return data

    def log_stream(self, request: Request, path: str, query: dict[str, str]) -> LineStream:
        """A text stream (a pod's log), once the apiserver has accepted it (a refusal raises
        here, before any line)."""
        stream = LineStream()
        opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        stream.task = _LOOP.submit(stream.pump(self._transport, path, query, opened))
        try:
            opened.result()
        except StreamError as err:
            raise self.refusal(err.status, err.message, request) from None
        except NO_ANSWER as err:
            raise self.no_answer(err) from None
        return stream


class Apart:
    """A coroutine on an event loop of its own, in a daemon thread: for a loop whose callbacks
    may block (a watch handing changes to a slow reader through a bounded queue), which must
    never hold the shared loop the reader's own calls need."""

    def __init__(self, coroutine: Coroutine[Any, Any, None], name: str = "taas-watch") -> None:
        self._loop = asyncio.new_event_loop()
        self._task = self._loop.create_task(coroutine)
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):  # stopped: nothing to say
            self._loop.run_until_complete(self._task)

    def done(self) -> bool:
        return not self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel it and wait (at most `timeout` seconds) for its clean-up."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._task.cancel)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()


class LineStream:
    """Lines of one stream, as text without the newline; `close()` (from any thread) ends it."""

    def __init__(self) -> None:
        self.lines: queue.Queue[object] = queue.Queue(maxsize=LINES_HELD)
        self.closed = threading.Event()
        self.task: concurrent.futures.Future[None] | None = None

    async def pump(
        self,
        transport: Transport,
        path: str,
        query: dict[str, str],
        opened: concurrent.futures.Future[None],
    ) -> None:
        """On the private loop: open the stream, tell `opened`, then hand the lines over
        (a full queue waits for the reader; nothing blocks the loop)."""
        try:
            async with transport.open_lines(path, query) as lines:
                opened.set_result(None)
                async for line in lines:
                    while not self.closed.is_set():
                        try:
                            self.lines.put_nowait(line)
                            break
                        except queue.Full:
                            await asyncio.sleep(0.05)
        except BaseException as err:
            if not opened.done():
                opened.set_exception(err)
            if isinstance(err, asyncio.CancelledError):
                raise
        finally:
            self.closed.set()

    def __iter__(self) -> Iterator[str]:
        while True:
            try:
                yield str(self.lines.get(timeout=0.2))
            except queue.Empty:
                if self.closed.is_set() and self.lines.empty():
                    return

    def close(self) -> None:
        """Stop reading (from another thread)."""
        self.closed.set()
        if self.task is not None:
            self.task.cancel()
