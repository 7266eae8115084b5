"""Sampling profiles of a Python controller during a measured run (py-spy), and their summary.

    profiler = Profiler(pid, out_file).start()    # py-spy record --pid, collapsed stacks
    profiler.stop()                               # SIGINT: py-spy writes the file and exits
    summarize(collapsed_file, top=25) -> str      # self and inclusive time per frame, by owner

py-spy samples the controller from outside (its own process, not in the controller's tree, so
the CPU figures do not count it; `--nonblocking` so the controller is never paused), only
threads holding the GIL (`--gil`: Python work; on a loaded 2-core machine a thread woken from
epoll or a socket read but waiting for a core otherwise counts as busy). Alongside, the CPU
seconds of each of the controller's threads over the recording (/proc), main thread (the
asyncio loop: kopf and the passes) apart from the others (HTTP calls in worker threads). The
collapsed-stack file (`frame;frame;frame count` per line) is what flame-graph tools read
(`flamegraph.pl`, speedscope.app); `summarize` turns it into a text table: the frames that
take the most samples by themselves ("self") and with everything they call ("total"), and the
share of samples spent in kopf, in the kubernetes client/urllib3, in TaaS, in pydantic and in
the rest (asyncio, json, ssl, ...), judged by the innermost frame.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path

from taas_operator.processes import spawn, stop

SAMPLES_PER_S = 100
_TICKS = os.sysconf("SC_CLK_TCK")
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::(?P<line>\d+))?\)$")
#: Owner of a frame by the path of its file, first match wins.
OWNERS = (
    ("kopf", "kopf/"),
    ("TaaS", "taas_operator/"),
    ("kubernetes client", "kubernetes/"),
    ("urllib3", "urllib3/"),
    ("aiohttp", "aiohttp/"),
    ("pydantic", "pydantic"),
    ("asyncio", "asyncio/"),
    ("json", "json/"),
    ("ssl", "ssl.py"),
    ("logging", "logging/"),
    ("copy", "copy.py"),
)


def py_spy() -> str | None:
    """The py-spy executable, if installed (`pip install py-spy`)."""
    return shutil.which("py-spy")


class Profiler:
    """py-spy recording one process until `stop()`."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid, self.out = pid, out
        self._proc: subprocess.Popen[bytes] | None = None
        self._threads_before: dict[int, float] = {}

    def start(self) -> Profiler:
        exe = py_spy()
        if exe is None:
            raise RuntimeError("--profile needs py-spy: pip install py-spy")
        self.out.parent.mkdir(parents=True, exist_ok=True)
        log = self.out.with_suffix(".py-spy.log").open("ab")
        self._threads_before = thread_cpu(self.pid)
        cmd = [exe, "record", "--pid", str(self.pid), "--format", "raw", "--nonblocking", "--gil"]
        cmd += ["--rate", str(SAMPLES_PER_S), "--output", str(self.out)]
        self._proc = spawn(cmd, stdout=log)
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        after = thread_cpu(self.pid)
        stop(self._proc, signal.SIGINT, grace=30)
        self._proc = None
        used = {tid: cpu - self._threads_before.get(tid, 0.0) for tid, cpu in after.items()}
        main = used.pop(self.pid, 0.0)
        others = sorted(used.values(), reverse=True)
        self.out.with_suffix(".threads").write_text(
            f"main thread {main:.2f} s CPU; {len(others)} other threads {sum(others):.2f} s "
            f"(busiest: {', '.join(f'{v:.2f}' for v in others[:4])})\n"
        )


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of `pid` now."""
    out: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    return out


def _owner(frame: str) -> str:
    match = _FRAME.match(frame)
    path = match["file"] if match else frame
    for owner, marker in OWNERS:
        if path.startswith(marker) or f"/{marker}" in path:
            return owner
    return "other"


def _short(frame: str) -> str:
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match["file"]
    for marker in ("site-packages/", "python3.11/", "operator/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match['func']} ({path})"


def summarize(collapsed: Path, top: int = 25) -> str:
    """Self and inclusive samples per frame, and per owner (see the module)."""
    self_time: Counter[str] = Counter()
    total_time: Counter[str] = Counter()
    owners: Counter[str] = Counter()
    samples = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(f) for f in stack.split(";")]
        raw = stack.split(";")
        # the first frame is py-spy's thread label ("process 123:..." / "<thread>")
        samples += count
        self_time[frames[-1]] += count
        owners[_owner(raw[-1])] += count
        for frame in set(frames):
            total_time[frame] += count
    if not samples:
        return f"{collapsed}: no samples"
    lines = [
        f"{collapsed.name}: {samples} samples ({samples / SAMPLES_PER_S:.1f} s holding the GIL)"
    ]
    threads = collapsed.with_suffix(".threads")
    if threads.exists():
        lines.append("  " + threads.read_text().strip())
    lines.append(
        "  by owner of the innermost frame: "
        + ", ".join(f"{o} {n / samples:.0%}" for o, n in owners.most_common())
    )
    lines.append(f"  top {top} frames by total (inclusive) share:")
    lines += [f"    {n / samples:6.1%}  {f}" for f, n in total_time.most_common(top)]
    lines.append(f"  top {top} frames by self share:")
    lines += [f"    {n / samples:6.1%}  {f}" for f, n in self_time.most_common(top)]
    return "\n".join(lines)
