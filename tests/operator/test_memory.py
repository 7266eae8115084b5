"""Freed memory goes back to the system: after a burst of big blocks (a big job's pod events)
is freed between small blocks that stay, glibc keeps the pages; the operator's task returns
them. No cluster: the process itself, its resident memory read from /proc."""

from __future__ import annotations

import asyncio
import gc

import pytest

from taas_operator.controller.memory import _malloc_trim, _resident_bytes, release_freed_memory

MIB = 1024 * 1024


@pytest.mark.skipif(_malloc_trim() is None, reason="the C library has no malloc_trim (not glibc)")
def test_memory_freed_after_a_burst_is_given_back() -> None:
    async def scenario() -> tuple[float, float]:
        task = asyncio.ensure_future(release_freed_memory(every_s=0.05))
        await asyncio.sleep(0.01)
        start = _resident_bytes()
        burst, kept = [], []
        for _ in range(1500):
            burst.append(bytearray(60_000))  # a pod event of a job of 700 replicas
            kept.append(bytearray(200))  # what stays between them
        del burst
        gc.collect()
        freed_but_kept = (_resident_bytes() - start) / MIB
        await asyncio.sleep(0.4)
        task.cancel()
        return freed_but_kept, (_resident_bytes() - start) / MIB

    before, after = asyncio.run(scenario())
    assert before > 40, "glibc gave the burst back by itself: nothing to show"
    assert after < 10, (before, after)
