"""Giving the memory a burst of work freed back to the system, as a long-running service must.

    await release_freed_memory(every_s=5.0)     # a task for the operator's life (glibc only)

The pods of a big TFJob are big (each carries the whole cluster spec: a job of 1,100 replicas
gives every pod some 90 KB of hosts), and the operator parses each of their watch events and
builds their manifests. CPython hands such blocks to the C allocator, and glibc keeps what is
freed inside its heap for reuse unless told to give it back, so the operator's resident memory
stayed at the high-water mark of the last burst: on a simulated cluster, 96 MiB kept after a
job of 550 replicas started, 18 MiB with this task (`bench.scale`). `malloc_trim(0)` returns
the free pages of the heap to the kernel; it costs about a millisecond and runs only when the
process holds a few MiB more than after the last call. Where the C library has no
`malloc_trim` (not glibc) nothing is done.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("taas_operator.controller")

#: Trim only when resident memory grew this much since the last trim.
GROWTH_BYTES = 4 * 1024 * 1024
_PAGE = 4096


def _resident_bytes() -> int:
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _malloc_trim() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


async def release_freed_memory(every_s: float = 5.0) -> None:
    """Every `every_s` seconds, give freed heap memory back when it has grown (see above)."""
    trim = _malloc_trim()
    if trim is None:
        logger.debug("no malloc_trim in this C library: freed memory stays with the process")
        return
    floor = _resident_bytes()
    while True:
        await asyncio.sleep(every_s)
        if _resident_bytes() - floor >= GROWTH_BYTES:
            trim()
            floor = _resident_bytes()
