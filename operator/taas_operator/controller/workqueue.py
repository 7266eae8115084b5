"""Per-job work queue: coalesced, serialized passes and one wake-up timer per job.

    queue = WorkQueue(run_pass, max_running=4)  # run_pass(key) -> datetime | None (wake-up)
    queue.request(key)                     # a pass soon (many requests -> one pass)
    queue.request(key, background=True)    # a pass when no other is waiting
    queue.forget(key)                      # the job is gone: drop its timer
    queue.pause() / queue.resume()         # hold passes not started yet (peering, start-up)
    await queue.close()

Events for one job arrive in bursts (its pods and services change together); `request` only
marks the job dirty, and a single task per job runs passes until nothing new came in, so two
passes of one job never overlap. After a pass its returned time arms the job's only timer (on
time: activeDeadlineSeconds, ttlSecondsAfterFinished); a pass that raises is retried with an
exponential backoff (`engine.backoff_delay`: 1 s doubling to 5 min), logged, never crashing
the operator.
At most `max_running` passes (of different keys) run at once; the others wait their turn in the
order they were requested, so when many jobs arrive together the first ones finish first
instead of all advancing slowly side by side. Background requests (the operator's re-check of
every job it lists when it starts, see `triggers`) wait until no other pass is waiting: a job
created while 5,000 are re-checked is not served after them. A later ordinary request for a
key moves it to the front lane.
No Kubernetes here: keys are opaque, e.g. (namespace, name).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime

from taas_operator.engine import backoff_delay

logger = logging.getLogger(__name__)

PassFn = Callable[[Hashable], Awaitable[datetime | None]]
BACKOFF_START = 1.0
BACKOFF_MAX = 300.0
#: Wake a little after the due time: the engine truncates `now` to whole seconds.
_SLACK = 0.05


@dataclass
class _Slot:
    dirty: bool = False
    background: bool = True  # every request since the last pass was a background one
    task: asyncio.Task[None] | None = None
    timer: asyncio.TimerHandle | None = None
    failures: int = 0


class _Lanes:
    """`max_running` turns handed out first come first served, the front lane before the
    background one (a semaphore with two FIFO queues of waiters)."""

    def __init__(self, turns: int) -> None:
        self.free = turns
        self.waiting: dict[bool, deque[tuple[Hashable, asyncio.Future[None]]]] = {
            False: deque(),
            True: deque(),
        }

    async def acquire(self, key: Hashable, background: bool) -> None:
        if self.free > 0 and not self.waiting[False] and not self.waiting[True]:
            self.free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting[background].append((key, turn))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # handed a turn just as we were cancelled: pass it on
            else:
                for lane in self.waiting.values():
                    if (key, turn) in lane:
                        lane.remove((key, turn))
            raise

    def release(self) -> None:
        for lane in (self.waiting[False], self.waiting[True]):
            while lane:
                _, turn = lane.popleft()
                if not turn.done():
                    turn.set_result(None)
                    return
        self.free += 1

    def promote(self, key: Hashable) -> None:
        """A background waiter for `key` moves to the end of the front lane."""
        lane = self.waiting[True]
        for item in lane:
            if item[0] == key:
                lane.remove(item)
                self.waiting[False].append(item)
                return


class WorkQueue:
    """Runs `run_pass(key)` for each requested key, one pass at a time per key."""

    def __init__(self, run_pass: PassFn, max_running: int | None = None) -> None:
        self._run_pass = run_pass
        self._lanes = _Lanes(max_running) if max_running else None
        self._slots: dict[Hashable, _Slot] = {}
        self._closed = False
        self._go = asyncio.Event()
        self._go.set()

    def pause(self) -> None:
        """Passes not started yet wait (requests still coalesce); running ones finish."""
        self._go.clear()

    def resume(self) -> None:
        self._go.set()

    def request(self, key: Hashable, background: bool = False) -> None:
        """A pass over `key` soon; a request during a pass causes exactly one more pass.
        `background`: only when no ordinary pass is waiting for its turn."""
        if self._closed:
            return
        slot = self._slots.setdefault(key, _Slot())
        if not background and slot.background and self._lanes is not None:
            self._lanes.promote(key)
        slot.dirty = True
        slot.background = slot.background and background
        if slot.task is None or slot.task.done():
            slot.task = asyncio.get_running_loop().create_task(self._run(key, slot))

    def forget(self, key: Hashable) -> None:
        """Drop the key's timer (its object was deleted); a running pass ends on its own."""
        slot = self._slots.get(key)
        if slot is not None and slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None
        if slot is not None and (slot.task is None or slot.task.done()):
            del self._slots[key]

    async def close(self) -> None:
        """Cancel timers and running passes."""
        self._closed = True
        tasks = []
        for slot in self._slots.values():
            if slot.timer is not None:
                slot.timer.cancel()
            if slot.task is not None and not slot.task.done():
                slot.task.cancel()
                tasks.append(slot.task)
        await asyncio.gather(*tasks, return_exceptions=True)
        self._slots.clear()

    async def _run(self, key: Hashable, slot: _Slot) -> None:
        while slot.dirty and not self._closed:
            try:
                wake = await self._pass(key, slot)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                slot.failures += 1
                delay = backoff_delay(slot.failures, BACKOFF_START, BACKOFF_MAX)
                logger.error("pass over %s failed (retry in %.0fs): %s", key, delay, err)
                logger.debug("pass over %s failed", key, exc_info=True)
                self._arm(key, slot, delay)
                continue
            slot.failures = 0
            if wake is None:
                self._disarm(slot)
            else:
                delay = (wake - datetime.now(UTC)).total_seconds()
                self._arm(key, slot, max(delay, 0.0) + _SLACK)

    async def _pass(self, key: Hashable, slot: _Slot) -> datetime | None:
        await self._go.wait()
        if self._lanes is None:
            slot.dirty, slot.background = False, True
            return await self._run_pass(key)
        while True:
            await self._lanes.acquire(key, slot.background)
            if self._go.is_set():
                break
            self._lanes.release()  # paused while waiting for the turn: wait again
            await self._go.wait()
        try:
            slot.dirty, slot.background = False, True  # requests from now on: another pass
            return await self._run_pass(key)
        finally:
            self._lanes.release()

    def _arm(self, key: Hashable, slot: _Slot, delay: float) -> None:
        self._disarm(slot)
        slot.timer = asyncio.get_running_loop().call_later(delay, self.request, key)

    @staticmethod
    def _disarm(slot: _Slot) -> None:
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None
