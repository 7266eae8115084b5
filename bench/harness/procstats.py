"""Resident memory and CPU time of a process and its descendants, read from /proc.

    tree_pids(root) -> list[int]
    TreeSample(rss_bytes, cpu_s)          sample_tree(root) -> TreeSample
    PeakSampler(root, interval_s=0.1)     a thread: .start(), .peak_rss_bytes, .stop()
    settle(sampler, running, max_s)       wait until a controller's CPU is quiet

CPU seconds are user + system time of every live process in the tree plus what its reaped
children used (cutime/cstime); RSS is the sum of VmRSS over the tree. Linux only.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.harness.controllers import RunningController, wait_alive

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
SETTLE_QUIET_CPU_S = 0.05  # CPU seconds in a window that count as quiet
SETTLE_WINDOW_S = 2.0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    task_dir = Path(f"/proc/{pid}/task")
    try:
        for task in task_dir.iterdir():
            text = (task / "children").read_text()
            found.extend(int(p) for p in text.split())
    except OSError:
        pass
    return found


def tree_pids(root: int) -> list[int]:
    """`root` and every descendant alive now."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(_children(pid))
    return pids


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: split after its closing parenthesis
    return text[text.rindex(")") + 2 :].split()


@dataclass(frozen=True)
class TreeSample:
    """One reading of a process tree."""

    rss_bytes: int
    cpu_s: float


def sample_tree(root: int) -> TreeSample:
    """RSS and CPU seconds of the tree under `root` now (zeros once it is gone)."""
    rss = 0
    ticks = 0
    for pid in tree_pids(root):
        fields = _stat_fields(pid)
        if fields is None:
            continue
        # after the name: state(0) ... utime(11) stime(12) cutime(13) cstime(14) ... rss(21)
        ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))
        rss += int(fields[21]) * _PAGE
    return TreeSample(rss_bytes=rss, cpu_s=ticks / _TICKS)


class PeakSampler:
    """Samples the tree every `interval_s` in a daemon thread and keeps the peak RSS and the
    last CPU reading (which survives the process exiting)."""

    def __init__(self, root: int, interval_s: float = 0.1) -> None:
        self.root = root
        self.interval_s = interval_s
        self.peak_rss_bytes = 0
        self.last = TreeSample(0, 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="peak-sampler", daemon=True)

    def start(self) -> PeakSampler:
        self._thread.start()
        return self

    def sample(self) -> TreeSample:
        """Sample now (also updates the peak)."""
        current = sample_tree(self.root)
        if current.cpu_s or current.rss_bytes:
            self.last = current
        self.peak_rss_bytes = max(self.peak_rss_bytes, current.rss_bytes)
        return self.last

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def settle(sampler: PeakSampler, running: RunningController, max_s: float) -> float:
    """Wait until the controller's CPU is quiet for a window; return seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < max_s:
        before = sampler.sample().cpu_s
        time.sleep(SETTLE_WINDOW_S)
        wait_alive(running, 0)
        if sampler.sample().cpu_s - before < SETTLE_QUIET_CPU_S:
            break
    return time.monotonic() - started
