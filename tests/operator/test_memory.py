"""Freed memory goes back to the system: after a burst of big blocks (a big job's pod events)
is freed between small blocks that stay, glibc keeps the pages; the operator's task returns
them. No cluster: a fresh Python process (a clean heap), its resident memory read from /proc."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from taas_operator.controller.memory import _malloc_trim

pytestmark = pytest.mark.fast

SCENARIO = """
import asyncio, gc, json
from taas_operator.controller.memory import _resident_bytes, release_freed_memory

async def scenario():
    task = asyncio.ensure_future(release_freed_memory(every_s=0.05))
    await asyncio.sleep(0.01)
    start = _resident_bytes()
    burst, kept = [], []
    for _ in range(1500):
        burst.append(bytearray(60_000))  # a pod event of a job of 700 replicas
        kept.append(bytearray(200))  # what stays between them
    del burst
    gc.collect()
    freed_but_kept = _resident_bytes() - start
    await asyncio.sleep(0.4)
    task.cancel()
    return freed_but_kept, _resident_bytes() - start

print(json.dumps(asyncio.run(scenario())))
"""


@pytest.mark.skipif(_malloc_trim() is None, reason="the C library has no malloc_trim (not glibc)")
def test_memory_freed_after_a_burst_is_given_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=60, check=True
    )
    before, after = (n / 2**20 for n in json.loads(done.stdout))
    assert before > 40, "glibc gave the burst back by itself: nothing to show"
    assert after < 10, (before, after)
