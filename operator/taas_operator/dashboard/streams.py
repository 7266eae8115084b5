"""Server-sent event streams and what bounds them.

    EventStream(request).open() -> stream; stream.send(event, data); stream.ping()
    StreamSlots(per_viewer, total).take(viewer) -> context manager; Refusal 429 beyond a cap
    LogBuffer(limit).put(item); await .get() -> item; .items; .take_dropped() -> int

A browser that never reads cannot grow the server: a viewer holds at most `per_viewer` open
streams and the server `total` (429, with a message, beyond either), and a followed log goes
through a `LogBuffer` that keeps the newest `limit` lines and counts what it dropped (the page
is told how many), so a slow reader costs at most `limit` lines.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from aiohttp import web
from pydantic import BaseModel

from taas_operator.dashboard.access import Refusal, Viewer

T = TypeVar("T")


class EventStream:
    """A server-sent events response."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )

    async def open(self) -> EventStream:
        await self.response.prepare(self.request)
        await self.response.write(b"retry: 2000\n\n")
        return self

    async def send(self, event: str, data: Any) -> None:
        payload = data.model_dump_json() if isinstance(data, BaseModel) else json.dumps(data)
        await self.response.write(f"event: {event}\ndata: {payload}\n\n".encode())

    async def ping(self) -> None:
        await self.response.write(b": ping\n\n")


class StreamSlots:
    """How many streams are open, per viewer and in all."""

    def __init__(self, per_viewer: int, total: int) -> None:
        self.per_viewer, self.total, self.open = per_viewer, total, 0

    @contextmanager
    def take(self, viewer: Viewer) -> Iterator[None]:
        """Hold one slot for the length of a stream; Refusal(429) when none is free."""
        if viewer.streams >= self.per_viewer:
            raise Refusal(
                429,
                f"you have {viewer.streams} live views open (at most {self.per_viewer}): close "
                f"some dashboard tabs",
            )
        if self.open >= self.total:
            raise Refusal(
                429, f"the dashboard serves {self.open} live views (its limit): try again soon"
            )
        viewer.streams += 1
        self.open += 1
        try:
            yield
        finally:
            viewer.streams -= 1
            self.open -= 1


class LogBuffer(Generic[T]):
    """A queue of at most `limit` items that drops the oldest when full, and counts them."""

    def __init__(self, limit: int) -> None:
        self.items: deque[T] = deque()
        self.limit, self.dropped = limit, 0
        self.ready = asyncio.Event()

    def put(self, item: T) -> None:
        if len(self.items) >= self.limit:
            self.items.popleft()
            self.dropped += 1
        self.items.append(item)
        self.ready.set()

    async def get(self) -> T:
        while not self.items:
            self.ready.clear()
            await self.ready.wait()
        return self.items.popleft()

    def take_dropped(self) -> int:
        dropped, self.dropped = self.dropped, 0
        return dropped
