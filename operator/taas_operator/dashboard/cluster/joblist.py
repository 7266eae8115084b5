"""The dashboard's jobs list from a cluster: one list-then-watch of TFJobs, cluster-wide when the
identity may list them in every namespace (`kubectl get tfjobs -A`), else one per namespace
(those asked for, else those the identity may list them in (`scopes`), else the context's), each
refused namespace named on the page.

    jobs = JobList(api, board, namespaces, names)
    await jobs.resolve()                                # which namespaces (`jobs.shown`)
    await jobs.follow()                                 # for ever
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from taas_operator.api.resources import TFJOB
from taas_operator.apiserver.errors import Unreachable
from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.dashboard.board import JobsBoard, Key, key_of
from taas_operator.dashboard.cluster.follow import (
    REFUSED,
    RETRY_MAX,
    RETRY_START,
    list_watch,
)
from taas_operator.dashboard.cluster.scopes import NamespaceNames, readable

T = TypeVar("T")


class JobList:
    """Keeps `board` holding every TFJob the identity may list in its scope."""

    def __init__(
        self,
        api: KubeApi,
        board: JobsBoard,
        namespaces: list[str],
        names: NamespaceNames | None = None,
    ) -> None:
        self.api, self.board, self.namespaces = api, board, namespaces
        self.names = names or NamespaceNames(None)
        #: The scopes followed (None: every namespace); set by `resolve`.
        self.shown: list[str | None] = list(namespaces)
        self.scopes: dict[str | None, set[Key]] = {}
        self.problems: dict[str | None, str] = {}
        self.refused: dict[str, str] = {}
        self.scope_note = ""

    async def follow(self) -> None:
        """Keep the board current for ever. Each list retries by itself and says on the page
        while it cannot follow; should the whole stop on an error all the same, the page says
        that too (the list would otherwise look current)."""
        try:
            await self._follow()
        except Exception as exc:
            self.board.set_problem(
                f"The jobs list stopped following the cluster "
                f"({exc or type(exc).__name__}): it is out of date; restart taas dashboard."
            )

    async def resolve(self) -> None:
        """Decide the scopes once: those asked for, else every namespace when the identity may
        list TFJobs there, else the namespaces it may list them in, else the context's."""
        if self.namespaces:
            return
        if await self._retrying(self._can_list_everywhere):
            self.shown = [None]
            return
        found = await self._retrying(lambda: readable(self.api, self.names))
        self.shown = list(found.namespaces) or [self.api.namespace]
        fallback = "" if found.namespaces else f"; showing namespace {self.api.namespace}"
        self.scope_note = (
            f"You may not list TFJobs in every namespace (kubectl get tfjobs -A would be "
            f"refused): {found.note}{fallback}."
        )
        self._notes()

    async def _follow(self) -> None:
        if not self.shown:
            await self.resolve()
        await asyncio.gather(*(self._follow_scope(s) for s in self.shown))

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        delay = RETRY_START
        while True:
            try:
                result = await call()
                self.board.set_problem(None)
                return result
            except Unreachable as exc:
                self.board.set_problem(
                    f"The apiserver at {self.api.server} is not answering ({exc}); retrying."
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    async def _can_list_everywhere(self) -> bool:
        status, _ = await self.api.request("GET", TFJOB.path(), params={"limit": "1"})
        return status == 200

    async def _follow_scope(self, namespace: str | None) -> None:
        self.scopes[namespace] = set()

        def reset(items: list[dict[str, Any]]) -> None:
            keys = {key_of(i) for i in items}
            for key in self.scopes[namespace] - keys:
                self.board.remove(*key)
            self.scopes[namespace] = keys
            for item in items:
                self.board.upsert(item)
            self.board.synced = True
            self.board.set_notes(self._note_lines())

        def change(kind: str, obj: dict[str, Any]) -> None:
            key = key_of(obj)
            if kind == "DELETED":
                self.scopes[namespace].discard(key)
                self.board.remove(*key)
            else:
                self.scopes[namespace].add(key)
                self.board.upsert(obj)

        def problem(text: str | None) -> None:
            if text is None:
                self.problems.pop(namespace, None)
            else:
                self.problems[namespace] = text
            self.board.set_problem(next(iter(self.problems.values()), None))

        try:
            await list_watch(
                self.api, TFJOB.path(namespace or ""), {}, reset, change, problem, "the jobs list"
            )
        except REFUSED as exc:
            where = namespace or "every namespace"
            self.refused[where] = str(exc)
            self.board.synced = True
            self._notes()

    def _note_lines(self) -> list[str]:
        notes = [self.scope_note] if self.scope_note else []
        notes += [
            f"Namespace {ns}: you may not list TFJobs there ({why})."
            for ns, why in self.refused.items()
        ]
        return notes

    def _notes(self) -> None:
        self.board.set_notes(self._note_lines())
