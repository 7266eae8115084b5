"""The one list-then-watch loop of TaaS: the operator's informers, the dashboard's watches and
the client's `watch`/`wait` all follow the apiserver through it.

    await list_then_watch(pages, watch, sink, retry=Retry(...))     # until cancelled

`pages()` lists (an async iterator of pages: items, and the list's resourceVersion),
`watch(version)` follows from a resourceVersion (an async iterator of watch events, bookmarks
included). What the sink gets, in order: `page(items)` per page and `listed()` once a whole list
is in, then `changed(type, object)` per ADDED/MODIFIED/DELETED event; `failed(error, delay)`
before each wait of the back-off.

- A watch the apiserver ends by itself (its timeoutSeconds) goes on from the last version seen
  (bookmarks keep that version fresh when nothing changes).
- 410 Gone (the version is too old: an ERROR event or the answer's status) lists again; the
  sink's `listed()` is where a caller compares the new list with what it knew (what vanished
  in the gap was deleted).
- Any other error backs off (`retry.delay(failures)`) and lists again, except the errors of
  `retry.fatal`, which end the loop (raised to the caller: a refusal it must show). Only a
  stream that was cut (`retry.cut`: the apiserver restarting, a connection reset) goes on
  from the last version, and only when not `retry.relist` (the dashboard: nothing changed
  meanwhile is missed, and its page says when it has caught up): an error the loop cannot
  explain (a line too long, an undecodable event, an ERROR event, an error answer) may have
  lost an event, and a watch from the same version would meet the same event again. A watch
  that ends at once counts as an error, so a misbehaving server is never spun on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from taas_operator.apiserver.transport import CUT, StreamError

GONE = 410
#: A watch that ends sooner than this (without an error) is retried after the back-off.
MIN_WATCH_S = 1.0

Pages = Callable[[], AsyncIterator[tuple[list[dict[str, Any]], str]]]
Watch = Callable[[str], AsyncIterator[Mapping[str, Any]]]


class Sink(Protocol):
    """What a list-then-watch delivers to."""

    def page(self, items: list[dict[str, Any]]) -> None:
        """One page of a list."""

    def listed(self) -> None:
        """The whole list is in (the first, or a new one after 410 Gone or an outage)."""

    def changed(self, event_type: str, obj: dict[str, Any]) -> None:
        """One ADDED, MODIFIED or DELETED watch event."""

    def failed(self, error: BaseException, delay: float) -> None:
        """A retried error; the loop waits `delay` seconds next."""


class Gone(Exception):
    """The apiserver no longer has the version asked for: list again."""


class WatchEnded(Exception):
    """A watch answered an error event, or ended at once."""


@dataclass(frozen=True)
class Retry:
    """Which errors end the loop, which may go on from the last version, after how long, and
    whether even a cut stream lists again."""

    fatal: tuple[type[BaseException], ...] = ()
    cut: tuple[type[BaseException], ...] = CUT
    delay: Callable[[int], float] = field(default=lambda failures: min(2.0**failures, 30.0))
    relist: bool = False


async def list_then_watch(pages: Pages, watch: Watch, sink: Sink, retry: Retry) -> None:
    """List, then watch, for ever (see the module)."""
    version, failures = "", 0
    while True:
        try:
            if not version:
                listed = ""
                async for items, page_version in pages():
                    sink.page(items)
                    listed = page_version
                sink.listed()
                version = listed  # only once the whole list is in (a page may fail)
            started = time.monotonic()
            async for event in watch(version):
                version = _follow(event, version, sink)
                failures = 0
            if time.monotonic() - started < MIN_WATCH_S:
                raise WatchEnded("the watch ended at once")
            failures = 0
        except Gone:
            version = ""
        except Exception as err:
            if isinstance(err, StreamError) and err.status == GONE:
                version = ""
                continue
            failures = await _back_off(err, failures, retry, sink)
            if retry.relist or not isinstance(err, retry.cut):
                version = ""


def _follow(event: Mapping[str, Any], version: str, sink: Sink) -> str:
    """Deliver one watch event; the version to go on from."""
    event_type, obj = event.get("type"), event.get("object") or {}
    if event_type == "ERROR":
        if obj.get("code") == GONE:
            raise Gone()
        raise WatchEnded(f"watch error: {obj.get('message', obj)}")
    found = (obj.get("metadata") or {}).get("resourceVersion")
    if event_type in ("ADDED", "MODIFIED", "DELETED"):
        sink.changed(str(event_type), obj)
    return str(found) if found else version


async def _back_off(error: BaseException, failures: int, retry: Retry, sink: Sink) -> int:
    if isinstance(error, retry.fatal):
        raise error
    failures += 1
    delay = retry.delay(failures)
    sink.failed(error, delay)
    await asyncio.sleep(delay)
    return failures
