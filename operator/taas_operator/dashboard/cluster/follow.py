"""The dashboard's use of the one list-then-watch loop (`apiserver.listwatch`): list (paged),
follow the watch from the list's resourceVersion, list again on 410 Gone and after any error
(backing off 1 s doubling to 10 s), and say so through `problem` while it cannot follow: the
apiserver not answering, or a watch that fails (an event it cannot read, an error answer). Only
a refusal (403 and the like) ends it (`REFUSED`); the problem is cleared once a list is in again.

    await list_watch(api, path, params, reset, change, problem, what)   # for ever; REFUSED
    await list_all(api, path, params) -> (items, resourceVersion)
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from taas_operator.apiserver.errors import (
    ConfigError,
    Forbidden,
    NotFound,
    Request,
    Unreachable,
    refused,
)
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.apiserver.listwatch import Retry, list_then_watch

RETRY_START, RETRY_MAX = 1.0, 10.0
#: Failures closer than this (a list, then its watch failing again) are one run: "since" stays.
FAILURES_APART_S = 3 * RETRY_MAX
LIST_PAGE = 500

Reset = Callable[[list[dict[str, Any]]], None]
Change = Callable[[str, dict[str, Any]], None]
Problem = Callable[[str | None], None]


#: The apiserver refused a list (401, 403, 404: `errors.refused`, the server's words): retrying
#: will not help.
REFUSED = (ConfigError, Forbidden, NotFound)


def clock() -> str:
    """The local time of day, for "since HH:MM:SS" in messages."""
    return datetime.now(UTC).astimezone().strftime("%H:%M:%S")


class _Sink:
    """The dashboard's side of the one list-then-watch loop: whole lists, changes, outages."""

    def __init__(self, api: KubeApi, reset: Reset, change: Change, problem: Problem, what: str):
        self.api, self.reset, self.change, self.problem, self.what = (
            api,
            reset,
            change,
            problem,
            what,
        )
        self.items: list[dict[str, Any]] = []
        self.since: str | None = None  # when the failures began (kept while they go on)
        self.failed_at = -math.inf  # time.monotonic() of the last failure
        self.shown = False

    def page(self, items: list[dict[str, Any]]) -> None:
        self.items += items

    def listed(self) -> None:
        items, self.items = self.items, []
        self.reset(items)
        if self.shown:
            self.problem(None)
            self.shown = False

    def changed(self, event_type: str, obj: dict[str, Any]) -> None:
        self.change(event_type, obj)

    def failed(self, error: BaseException, delay: float) -> None:
        self.items = []
        now = time.monotonic()
        if now - self.failed_at > FAILURES_APART_S:
            self.since = clock()  # not the same run of failures: a list followed for a while
        self.failed_at, self.shown = now, True
        retry = f"Retrying in {delay:.0f} s; this page catches up by itself."
        if isinstance(error, Unreachable):
            self.problem(
                f"The apiserver at {self.api.server} is not answering ({error}) since "
                f"{self.since}: {self.what} may be out of date. {retry}"
            )
        else:
            self.problem(
                f"Cannot follow {self.what} ({error or type(error).__name__}) since "
                f"{self.since}: it may be out of date. {retry}"
            )


async def list_watch(
    api: KubeApi,
    path: str,
    params: dict[str, str],
    reset: Reset,
    change: Change,
    problem: Problem,
    what: str,
) -> None:
    """List `path`, then follow its watch for ever (`apiserver.listwatch`): `reset(items)` after
    each list, `change(type, object)` per event, `problem(text or None)` while it cannot follow
    (it lists again after each). Raises one of REFUSED."""

    async def pages() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        items, version = await list_all(api, path, params)
        yield items, version

    def watch(version: str) -> AsyncIterator[Mapping[str, Any]]:
        return api.watch(path, {**params, "resourceVersion": version})

    retry = Retry(
        fatal=REFUSED,
        delay=lambda failures: min(RETRY_START * 2 ** (failures - 1), RETRY_MAX),
        relist=True,
    )
    await list_then_watch(pages, watch, _Sink(api, reset, change, problem, what), retry)


async def list_all(
    api: KubeApi, path: str, params: dict[str, str]
) -> tuple[list[dict[str, Any]], str]:
    """Every item of `path` (pages of LIST_PAGE) and the list's resourceVersion."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {**params, "limit": str(LIST_PAGE)}
        if token:
            query["continue"] = token
        status, data = await api.request("GET", path, params=query)
        if status in (401, 403, 404):
            raise refused(status, data, Request("list", path))
        if status != 200 or not isinstance(data, dict):
            raise Unreachable(f"HTTP {status} listing {path}")
        items += data.get("items") or []
        token = (data.get("metadata") or {}).get("continue") or ""
        if not token:
            return items, str((data.get("metadata") or {}).get("resourceVersion") or "")
