"""The namespaces a person may list TFJobs in, when they may not list them in every one.

    names = NamespaceNames(api)                   # namespace names, as `api`'s identity lists them
    await readable(viewer, names) -> Readable     # where the viewer may list tfjobs, and a note

A namespace-scoped person (the `edit` role in team-a) may neither list TFJobs everywhere nor
list namespaces, so the names come from the viewer when they may list namespaces, else from the
dashboard's own identity (the chart grants its ServiceAccount `list namespaces` and nothing
else of them); each name is then asked of the apiserver as the viewer (a
SelfSubjectAccessReview: `list tfjobs` there?). Cost: one list and one review per namespace per
sign-in, at most `MAX_CHECKED` namespaces, `CONCURRENT` reviews at a time; a cluster with more
names the first `MAX_CHECKED` (alphabetically) and says so on the page. Names are cached
`CACHE_SECONDS` for every sign-in, so many sign-ins cost one list.
"""

from __future__ import annotations

import asyncio
import time

from pydantic import BaseModel

from taas_operator.apiserver.kubeapi import KubeApi
from taas_operator.dashboard.cluster.rbac import allowed

NAMESPACES = "/api/v1/namespaces"
MAX_CHECKED = 256
CONCURRENT = 8
CACHE_SECONDS = 30.0
#: What the page tells someone the dashboard shows nothing of theirs to (names the fix).
NARROWING = (
    "an admin can name your namespaces in the chart's dashboard.namespaces "
    "(taas dashboard -n NAMESPACE on the command line)"
)


class Readable(BaseModel):
    """Where the viewer may list TFJobs (sorted; empty: nowhere found) and what to tell them."""

    namespaces: list[str]
    note: str


class NamespaceNames:
    """The cluster's namespace names as one identity may list them (None: it may not)."""

    def __init__(self, api: KubeApi | None) -> None:
        self.api = api
        self._names: list[str] | None = None
        self._more = False
        self._at = 0.0
        self._lock = asyncio.Lock()

    async def list(self) -> tuple[list[str] | None, bool]:
        """(the first `MAX_CHECKED` names sorted, or None when refused; whether there are more).
        Raises Unreachable."""
        if self.api is None:
            return None, False
        async with self._lock:
            if time.monotonic() - self._at > CACHE_SECONDS:
                self._names, self._more = await list_names(self.api)
                self._at = time.monotonic()
            return self._names, self._more


async def list_names(api: KubeApi) -> tuple[list[str] | None, bool]:
    """One bounded list of namespace names as `api`'s identity; None when it may not."""
    status, data = await api.request("GET", NAMESPACES, params={"limit": str(MAX_CHECKED)})
    if status != 200 or not isinstance(data, dict):
        return None, False
    names = sorted(
        str((item.get("metadata") or {}).get("name", ""))
        for item in data.get("items") or []
        if isinstance(item, dict)
    )
    more = bool((data.get("metadata") or {}).get("continue"))
    return [n for n in names if n], more


async def readable(viewer: KubeApi, shared: NamespaceNames) -> Readable:
    """Where `viewer` may list TFJobs, from the namespaces it or the dashboard may list.
    Raises Unreachable."""
    names, more = await list_names(viewer)
    if names is None:
        names, more = await shared.list()
    if names is None:
        return Readable(
            namespaces=[],
            note="the dashboard may not list the cluster's namespaces to find yours: " + NARROWING,
        )
    gate = asyncio.Semaphore(CONCURRENT)

    async def check(namespace: str) -> bool:
        async with gate:
            return (await allowed(viewer, "list", namespace)).allowed

    verdicts = await asyncio.gather(*(check(n) for n in names))
    found = [n for n, ok in zip(names, verdicts, strict=True) if ok]
    where = ", ".join(found)
    note = (
        f"you may list TFJobs in {len(found)} namespace(s): showing {where}"
        if found
        else "you may list TFJobs in none of the cluster's namespaces: " + NARROWING
    )
    if more:
        note += f" (only the first {MAX_CHECKED} namespaces were checked: {NARROWING})"
    return Readable(namespaces=found, note=note)
