"""TensorBoard as a child process of this one, started and stopped within bounds.

    tensorboard_installed() -> bool
    served = serve(logdir_args, host, port, timeout)   # TensorBoardError if it cannot serve
    served.url, served.wait(), served.stop()

The `tensorboard` package of this Python environment (the `tensorflow` extra installs it) runs
as `python -m tensorboard.main`, in its own process group that dies with this process
(`taas_operator.processes`). `serve` returns once TensorBoard prints where it serves ("TensorBoard
2.21.0 at http://127.0.0.1:6006/"); if it exits first or is silent past `timeout`, the error
carries the last lines it printed (kept in a bounded buffer, like everything it prints after).
"""

from __future__ import annotations

import collections
import importlib.util
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from taas_operator.processes import spawn, stop

_SERVING = re.compile(r"TensorBoard \S+ at (https?://\S+?)/? \(Press CTRL\+C")
_KEPT_LINES = 200
_LINE_BYTES = 4096


class TensorBoardError(RuntimeError):
    """TensorBoard could not serve; the message says why, with its own last lines."""


def tensorboard_installed() -> bool:
    """Whether this Python environment has the `tensorboard` package."""
    return importlib.util.find_spec("tensorboard") is not None


class Served:
    """A TensorBoard process that serves at `url`."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.url = ""
        self.lines: collections.deque[str] = collections.deque(maxlen=_KEPT_LINES)
        self._serving = threading.Event()
        self._reader = threading.Thread(target=self._read, name="tensorboard-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(lambda: self.proc.stdout.readline(_LINE_BYTES), b""):  # type: ignore[union-attr]
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            found = _SERVING.search(line)
            if found and not self.url:
                self.url = found.group(1) + "/"
                self._serving.set()
        self._serving.set()  # it ended: nobody waits for a line that cannot come

    def tail(self, count: int = 15) -> str:
        """Its last lines, without TensorFlow's start-up noise."""
        noise = ("cuda", "cpu_feature_guard", "rebuild TensorFlow", "absl::InitializeLog")
        kept = [line for line in self.lines if line.strip() and not any(n in line for n in noise)]
        return "\n".join(kept[-count:])

    def wait_serving(self, timeout: float) -> None:
        """Return once it serves; TensorBoardError if it ended or stayed silent too long."""
        self._serving.wait(timeout)
        if self.url and self.proc.poll() is None:
            return
        if self.proc.poll() is None:
            self.stop()
            raise TensorBoardError(
                f"TensorBoard did not start serving within {timeout:.0f}s; its output:\n"
                + self.tail()
            )
        self._reader.join(2.0)
        raise TensorBoardError(
            f"TensorBoard exited with code {self.proc.returncode} before serving; its output:\n"
            + self.tail()
        )

    def wait(self) -> int:
        """Until TensorBoard exits; its exit code."""
        return self.proc.wait()

    def stop(self) -> int:
        """SIGTERM, then SIGKILL after 5 s; its exit code."""
        return stop(self.proc, signal.SIGTERM, grace=5.0)


def serve(logdir_args: Sequence[str], host: str, port: int, timeout: float = 120.0) -> Served:
    """Start TensorBoard on `logdir_args` (`--logdir=DIR` or `--logdir_spec=...`) at
    `host`:`port` (0: a free port) and return once it serves."""
    argv = [
        sys.executable,
        "-m",
        "tensorboard.main",
        *logdir_args,
        f"--host={host}",
        f"--port={port}",
        "--reload_interval=5",
    ]
    started = time.monotonic()
    served = Served(spawn(argv, death_signal=signal.SIGTERM))
    served.wait_serving(max(1.0, timeout - (time.monotonic() - started)))
    return served
