"""`apiserver.transport.Transport`'s interface over the in-memory `Store`: what the operator's
client calls, answered without HTTP.

    transport = FakeTransport(store)
    await transport.call(method, path, query=None, body=None, content_type=...) -> (status, data)
    async for event in transport.stream(path, query): ...   # a watch
    await transport.close()

Bodies go through JSON both ways, as over the wire. `lines` (pod logs) and `forward` (the
service proxy) have no fake: they raise `StreamError` 404 / NotImplementedError, so a test that
needs them belongs on the real apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from taas_operator.apiserver.transport import StreamError
from tests.harness.fakeapi.store import Store


class FakeTransport:
    """The transport of one client: its calls counted, closable like the real one."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.closed = False

    async def call(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        await asyncio.sleep(0)  # a request is a suspension point, as over a socket
        return self.store.handle(method, path, query, body, content_type)

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[Any]:
        try:
            watch = self.store.watch(path, query)
            async for event in watch:
                yield event
        except LookupError:
            raise StreamError(404, "404 page not found") from None

    async def lines(self, path: str, query: dict[str, str]) -> AsyncIterator[str]:
        raise StreamError(404, f"the fake apiserver serves no text stream ({path})")
        yield ""  # an async generator

    @contextlib.asynccontextmanager
    async def forward(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
    ) -> AsyncIterator[Any]:
        raise NotImplementedError("the fake apiserver has no service proxy")
        yield None

    async def close(self) -> None:
        self.closed = True
