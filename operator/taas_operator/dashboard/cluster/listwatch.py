"""The dashboard's list-then-watch loop: list (paged), follow the watch from the list's
resourceVersion, list again when the apiserver ends a watch with 410 Gone, and back off 1 s
doubling to 10 s while the apiserver does not answer (saying so through `problem`; once it
answers, the list is taken again so nothing changed meanwhile is missed).

    await list_watch(api, path, params, reset, change, problem, what)   # for ever; Refused
    await list_all(api, path, params) -> (items, resourceVersion)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from taas_operator.dashboard.kubeapi import KubeApi, Unreachable

RETRY_START, RETRY_MAX = 1.0, 10.0
LIST_PAGE = 500

Reset = Callable[[list[dict[str, Any]]], None]
Change = Callable[[str, dict[str, Any]], None]
Problem = Callable[[str | None], None]


class Refused(Exception):
    """The apiserver refused a list (403 and the like): retrying will not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def clock() -> str:
    """The local time of day, for "since HH:MM:SS" in messages."""
    return datetime.now(UTC).astimezone().strftime("%H:%M:%S")


async def list_watch(
    api: KubeApi,
    path: str,
    params: dict[str, str],
    reset: Reset,
    change: Change,
    problem: Problem,
    what: str,
) -> None:
    """List `path`, then follow its watch for ever: `reset(items)` after each list,
    `change(type, object)` per event, `problem(text or None)` on outages. Raises Refused."""
    delay = RETRY_START
    since: str | None = None
    while True:
        try:
            items, version = await list_all(api, path, params)
            reset(items)
            if since is not None:
                problem(None)
                since = None
            delay = RETRY_START
            while version:
                version = await _watch_once(api, path, params, version, change)
        except Unreachable as exc:
            since = since or clock()
            problem(
                f"The apiserver at {api.server} is not answering ({exc}) since {since}: "
                f"{what} may be out of date. Retrying every {int(RETRY_MAX)} s; this page "
                f"catches up by itself."
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)


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
            message = data.get("message", "") if isinstance(data, dict) else str(data)
            raise Refused(status, message)
        if status != 200 or not isinstance(data, dict):
            raise Unreachable(f"HTTP {status} listing {path}")
        items += data.get("items") or []
        token = (data.get("metadata") or {}).get("continue") or ""
        if not token:
            return items, str((data.get("metadata") or {}).get("resourceVersion") or "")


async def _watch_once(
    api: KubeApi, path: str, params: dict[str, str], version: str, change: Change
) -> str:
    """Follow one watch; the resourceVersion to resume from, or "" to list again (410)."""
    async for event in api.watch(path, {**params, "resourceVersion": version}):
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            return "" if obj.get("code") == 410 else version
        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            change(str(kind), obj)
    return version
