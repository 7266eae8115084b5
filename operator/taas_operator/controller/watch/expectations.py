"""Expectations (Kubernetes' word): the watch events that only echo the operator's own writes.

    expected = Expectations()
    expected.expect(job, ref, type_="ADDED")   # before writing `ref` = (plural, name) for `job`
    expected.created(job, ref, rv) -> bool     # after it: the written resourceVersion, None
                                               # when it failed or the name was taken;
                                               # True: a watch event seen meanwhile needs a pass
    expected.seen(job, ref, type_, rv) -> bool # a watch event; True: it needs a pass
    expected.pending(job, plurals) -> bool     # a write of those kinds not seen in the watch yet
    expected.forget(job)                       # a pass of the job starts, or the job is gone
    await expecting_echo(expected, request, job, ref, type_, write) -> dict | None
                                               # expect, await the write, then `created`

A pass that creates objects (or writes the job's status) already knows the result, so the
watch events of exactly those writes (same object, event type and resourceVersion) start no
further pass -- also when they arrive before the write's own answer. Everything else still
does: another event type, another resourceVersion (someone else wrote), a write that failed or
found the name taken after such an event arrived. The design
stays level-triggered: at worst one pass more than needed, never one less than a change needs.
No Kubernetes here: job keys are opaque, resourceVersions compared for equality only.
`expecting_echo` is the one way the operator wraps a write: every status write and creation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any

Ref = tuple[str, str]
# The state of one expected write: (_PENDING, "", type) in flight and no event came;
# (_EARLY, rv, type) its event came during the write; (_AWAIT, rv, type) the write made rv, its
# event not seen yet.
_PENDING, _EARLY, _AWAIT = "pending", "early", "await"


class Expectations:
    """Per job, the objects whose creation this process is making or has just made."""

    def __init__(self) -> None:
        self._jobs: dict[Hashable, dict[Ref, tuple[str, str, str]]] = {}

    def expect(self, job: Hashable, ref: Ref, type_: str = "ADDED") -> None:
        """`ref` is about to be written for `job`; its echo is a `type_` watch event."""
        self._jobs.setdefault(job, {})[ref] = (_PENDING, "", type_)

    def created(self, job: Hashable, ref: Ref, rv: str | None) -> bool:
        """The POST of `ref` ended; True when an event seen during it still needs a pass."""
        expected = self._jobs.get(job, {})
        entry = expected.pop(ref, None)
        if entry is None:
            return False
        state, early_rv, type_ = entry
        if state == _EARLY:
            return rv is None or rv != early_rv
        if state == _PENDING and rv:
            expected[ref] = (_AWAIT, rv, type_)
        return False

    def seen(self, job: Hashable, ref: Ref, type_: str | None, rv: str) -> bool:
        """A watch event about `job`; False only for the echo of our own write."""
        expected = self._jobs.get(job)
        entry = expected.get(ref) if expected else None
        if expected is None or entry is None or type_ != entry[2]:
            return True
        state, made_rv, _ = entry
        if state == _PENDING:
            expected[ref] = (_EARLY, rv, type_)
            return False
        del expected[ref]
        return state != _AWAIT or rv != made_rv

    def pending(self, job: Hashable, plurals: tuple[str, ...]) -> bool:
        """Some write of `job`'s objects of these kinds has not been seen in the watch yet."""
        expected = self._jobs.get(job) or {}
        return any(ref[0] in plurals and entry[0] != _EARLY for ref, entry in expected.items())

    def forget(self, job: Hashable) -> None:
        """Drop what is expected for `job` (late echoes then just cause one harmless pass)."""
        self._jobs.pop(job, None)

    def __len__(self) -> int:
        return sum(len(expected) for expected in self._jobs.values())


async def expecting_echo(
    expectations: Expectations,
    request: Callable[[Any], None],
    job: Hashable,
    ref: Ref,
    type_: str,
    write: Awaitable[dict[str, Any] | None],
) -> dict[str, Any] | None:
    """Await `write` (returning the object as stored, or None), its `type_` watch event expected
    meanwhile; `request(job)` when an event that came during it still needs a pass."""
    expectations.expect(job, ref, type_)
    written: dict[str, Any] | None = None
    try:
        written = await write
        return written
    finally:
        rv = str(((written or {}).get("metadata") or {}).get("resourceVersion") or "")
        if expectations.created(job, ref, rv or None):
            request(job)
