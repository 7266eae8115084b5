"""Per-job work queue: coalesced, serialized passes and one wake-up timer per job.

    queue = WorkQueue(run_pass, max_running=4, cost=None, group=None, weight=None)
                                           # run_pass(key) -> datetime | None
                                           # cost(key) -> the last pass's own CPU seconds
                                           # group(key) -> whose turn it is (a namespace)
                                           # weight(group) -> keys a group takes per turn
    queue.request(key)                     # a pass soon (many requests -> one pass)
    queue.request(key, background=True)    # a pass when no other is waiting
    queue.forget(key)                      # the job is gone: drop its timer
    queue.depth() -> int                   # keys with a pass waiting or running
    queue.pause() / queue.resume()         # hold passes not started yet (peering, start-up)
    await queue.close()

Events for one job arrive in bursts (its pods and services change together); `request` only
queues the key once, and a key requested while its pass runs gets exactly one more pass after
it, so two passes of one job never overlap. After a pass its returned time arms the job's only
timer (on time: activeDeadlineSeconds, ttlSecondsAfterFinished); a pass that raises is retried
with an exponential backoff (`planner.backoff_delay`: 1 s doubling to 5 min), logged, never
crashing the operator.
`max_running` workers (one per request when None) take keys in the order they were requested, so
when many jobs arrive together the first ones finish first instead of all advancing slowly side
by side; but groups take turns (`group`: the job's namespace): each group with a key waiting
gives one key (`weight(group)` keys, 1 by default) and goes to the back of the turns, first come
first served within a group. 3,000 jobs of one namespace then delay another namespace's job by
one pass per namespace with work, not by 3,000 passes. Background requests (the re-check of
every job the operator lists when it starts, see `controller`) are taken only when no other key
waits: a job created while 5,000 are re-checked is not served after them; a later ordinary
request for a key moves it to the front lane. Waiting keys cost a queue entry, not a task (a
restart queues thousands).
A key whose pass cost much (`cost`: the seconds of computing it, told by the pass's owner; a
job of a thousand replicas, whose passes read every pod) cools down for `COOL_DOWN` times that
cost (`COOL_MAX_S` at most) before its next pass: requests meanwhile wait and coalesce into one
pass, as Kubernetes' Job controller batches a second of pod events. A job of a thousand
replicas whose pods all change for minutes then takes a small share of the operator's CPU (a
pass at most every `COOL_DOWN` times its cost) instead of all of it, and still sees each change
within `COOL_MAX_S`; a pass that cost less than `COOL_AFTER_S` (a job of a few dozen replicas)
is not held back. The time a pass waits for the apiserver does not count.
No Kubernetes here: keys are opaque, e.g. (namespace, name).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from datetime import UTC, datetime

from taas_operator.planner import backoff_delay

logger = logging.getLogger(__name__)

PassFn = Callable[[Hashable], Awaitable[datetime | None]]
CostFn = Callable[[Hashable], float]
GroupFn = Callable[[Hashable], Hashable]
WeightFn = Callable[[Hashable], int]
BACKOFF_START = 1.0
BACKOFF_MAX = 300.0
#: Wake a little after the due time: the planner truncates `now` to whole seconds.
_SLACK = 0.05
FRONT, BACKGROUND = False, True
#: After a pass that cost at least `COOL_AFTER_S` seconds, its key waits this many times that
#: cost before the next one, `COOL_MAX_S` at most.
COOL_DOWN = 100.0
COOL_AFTER_S = 0.001
COOL_MAX_S = 1.0


class _Turns:
    """The waiting keys of one lane, a first-come queue per group; groups take turns."""

    def __init__(self, group: GroupFn, weight: WeightFn) -> None:
        self._group, self._weight = group, weight
        self._queues: dict[Hashable, deque[Hashable]] = {}
        self._turns: deque[Hashable] = deque()  # groups with keys, the one whose turn it is first
        self._taken = 0  # keys the first group took in its current turn

    def append(self, key: Hashable) -> None:
        group = self._group(key)
        queue = self._queues.get(group)
        if queue is None:
            queue = self._queues[group] = deque()
            self._turns.append(group)
        queue.append(key)

    def pop(self, live: Callable[[Hashable], bool]) -> Hashable | None:
        """The next key whose entry is `live` (stale entries are dropped), or None."""
        while self._turns:
            group = self._turns[0]
            queue = self._queues[group]
            while queue and not live(queue[0]):
                queue.popleft()
            if not queue:
                self._end_turn(group, queue)
                continue
            key = queue.popleft()
            self._taken += 1
            if not queue or self._taken >= max(1, self._weight(group)):
                self._end_turn(group, queue)
            return key
        return None

    def _end_turn(self, group: Hashable, queue: deque[Hashable]) -> None:
        self._turns.popleft()
        self._taken = 0
        if queue:
            self._turns.append(group)
        else:
            del self._queues[group]


def _one_group(key: Hashable) -> Hashable:
    return None


def _weight_one(group: Hashable) -> int:
    return 1


class WorkQueue:
    """Runs `run_pass(key)` for each requested key, one pass at a time per key."""

    def __init__(
        self,
        run_pass: PassFn,
        max_running: int | None = None,
        cost: CostFn | None = None,
        group: GroupFn | None = None,
        weight: WeightFn | None = None,
    ) -> None:
        self._run_pass = run_pass
        self._cost = cost
        self._max_workers = max_running
        turns = (group or _one_group, weight or _weight_one)
        self._lanes: dict[bool, _Turns] = {FRONT: _Turns(*turns), BACKGROUND: _Turns(*turns)}
        self._waiting: dict[Hashable, bool] = {}  # queued key -> its lane
        self._again: dict[Hashable, bool] = {}  # requested while running -> lane after it
        self._running: set[Hashable] = set()
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._failures: dict[Hashable, int] = {}
        self._cool_until: dict[Hashable, float] = {}  # key -> monotonic end of its cool-down
        self._cooling: dict[Hashable, bool] = {}  # requested while cooling -> lane after it
        self._workers: set[asyncio.Task[None]] = set()
        self._idle = 0
        self._ready = asyncio.Event()  # something waits in a lane
        self._go = asyncio.Event()  # not paused
        self._go.set()
        self._closed = False

    def request(self, key: Hashable, background: bool = False) -> None:
        """A pass over `key` soon; a request during a pass causes exactly one more pass.
        `background`: only when no ordinary request waits."""
        if self._closed:
            return
        if key in self._running:
            self._again[key] = self._again.get(key, BACKGROUND) and background
            return
        until = self._cool_until.get(key)
        if until is not None:
            left = until - time.monotonic()
            if left > 0:
                if key not in self._cooling:
                    asyncio.get_running_loop().call_later(left, self._cooled, key)
                self._cooling[key] = self._cooling.get(key, BACKGROUND) and background
                return
            del self._cool_until[key]
        lane = self._waiting.get(key)
        if lane is None or (lane is BACKGROUND and not background):
            # a key moved to the front stays in the background deque too: skipped there later
            self._waiting[key] = background
            self._lanes[background].append(key)
            self._ready.set()
            self._start_worker()

    def depth(self) -> int:
        """Keys with a pass waiting or running (the metrics' queue depth)."""
        return len(self._waiting) + len(self._running)

    def forget(self, key: Hashable) -> None:
        """Drop the key's timer (its object was deleted); a queued or running pass ends on
        its own (it finds nothing)."""
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._failures.pop(key, None)
        self._cool_until.pop(key, None)
        self._cooling.pop(key, None)

    def pause(self) -> None:
        """Passes not started yet wait (requests still coalesce); running ones finish."""
        self._go.clear()

    def resume(self) -> None:
        self._go.set()

    async def close(self) -> None:
        """Cancel timers and running passes."""
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._timers.clear()

    def _start_worker(self) -> None:
        if self._idle > 0:
            return
        if self._max_workers is not None and len(self._workers) >= self._max_workers:
            return
        worker = asyncio.get_running_loop().create_task(self._work())
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)

    def _next(self) -> Hashable | None:
        """The next waiting key, front lane first (stale background entries skipped), the
        groups of a lane in turn."""
        for lane in (FRONT, BACKGROUND):

            def live(key: Hashable, lane: bool = lane) -> bool:
                return self._waiting.get(key) is lane

            key = self._lanes[lane].pop(live)
            if key is not None:
                del self._waiting[key]
                return key
        self._ready.clear()
        return None

    async def _work(self) -> None:
        while not self._closed:
            await self._go.wait()
            key = self._next()
            if key is None:
                self._idle += 1
                try:
                    await self._ready.wait()
                finally:
                    self._idle -= 1
                continue
            self._running.add(key)
            try:
                await self._pass(key)
            finally:
                self._running.discard(key)
                spent = self._cost(key) if self._cost is not None else 0.0
                if spent >= COOL_AFTER_S:
                    self._cool_until[key] = time.monotonic() + min(spent * COOL_DOWN, COOL_MAX_S)
                again = self._again.pop(key, None)
                if again is not None:
                    self.request(key, again)

    async def _pass(self, key: Hashable) -> None:
        try:
            wake = await self._run_pass(key)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            failures = self._failures[key] = self._failures.get(key, 0) + 1
            delay = backoff_delay(failures, BACKOFF_START, BACKOFF_MAX)
            logger.error("pass over %s failed (retry in %.0fs): %s", key, delay, err)
            logger.debug("pass over %s failed", key, exc_info=True)
            self._arm(key, delay)
            return
        self._failures.pop(key, None)
        if wake is None:
            self._disarm(key)
        else:
            delay = (wake - datetime.now(UTC)).total_seconds()
            self._arm(key, max(delay, 0.0) + _SLACK)

    def _cooled(self, key: Hashable) -> None:
        """The key's cool-down is over: the requests it held become one."""
        self._cool_until.pop(key, None)
        lane = self._cooling.pop(key, None)
        if lane is not None:
            self.request(key, lane)

    def _arm(self, key: Hashable, delay: float) -> None:
        self._disarm(key)
        self._timers[key] = asyncio.get_running_loop().call_later(delay, self._due, key)

    def _due(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.request(key)

    def _disarm(self, key: Hashable) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
