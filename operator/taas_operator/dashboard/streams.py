"""Server-sent event streams and what bounds them.

    EventStream(request).open() -> stream; stream.send(event, data); stream.ping()
    StreamSlots(per_viewer, total, per_group).take(viewer) -> context manager; Refusal 429 beyond
                                                                a cap
    LogBuffer(limit).put(item); await .get() -> item; .items; .take_dropped() -> int

A browser that never reads cannot grow the server: a viewer holds at most `per_viewer` open
streams, their identity group (`shares`: the ServiceAccounts of one namespace) `per_group`
(half that once half the `total` is open), and the server `total` (429, with a message, beyond
any), and a followed log goes
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
from taas_operator.dashboard.shares import refusal_reason

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
    """How many streams are open, per viewer, per identity group and in all."""

    def __init__(self, per_viewer: int, total: int, per_group: int | None = None) -> None:
        self.per_viewer, self.total, self.open = per_viewer, total, 0
        self.per_group = per_group or per_viewer
        self.groups: dict[str, int] = {}  # group -> streams open (groups holding none left out)

    @contextmanager
    def take(self, viewer: Viewer) -> Iterator[None]:
        """Hold one slot for the length of a stream; Refusal(429) when none is free."""
        if viewer.streams >= self.per_viewer:
            raise Refusal(
                429,
                f"you have {viewer.streams} live views open (at most {self.per_viewer}): close "
                f"some dashboard tabs",
            )
        held = self.groups.get(viewer.group, 0)
        why = refusal_reason(held, self.open, self.per_group, self.total)
        if why == "full":
            raise Refusal(
                429, f"the dashboard serves {self.open} live views (its limit): try again soon"
            )
        if why is not None:
            most = self.per_group if why == "group" else max(self.per_group // 2, 1)
            busy = "" if why == "group" else f" while more than {self.total // 2} are open"
            raise Refusal(
                429,
                f"{viewer.group} has {held} live views open, its share (at most {most}{busy}): "
                "close some dashboard tabs",
            )
        viewer.streams += 1
        self.open += 1
        self.groups[viewer.group] = held + 1
        try:
            yield
        finally:
            viewer.streams -= 1
            self.open -= 1
            left = self.groups[viewer.group] - 1
            if left:
                self.groups[viewer.group] = left
            else:
                del self.groups[viewer.group]


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
