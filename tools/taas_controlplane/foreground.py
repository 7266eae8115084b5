"""Hold a started cluster in the foreground until Ctrl-C, SIGTERM or one of its parts exits.

    stop = stop_on_signals()           # before starting, so a Ctrl-C during start-up counts
    ... start ...
    return hold(stop, cluster.exited, cluster.directory)   # 0 when asked, 1 when a part died

`taas-controlplane up`, `cluster up` and `sim up` all wait this way. What they hold is a
`Parts` (a control plane, a cluster, a simulated cluster, the schedulers): `with parts:` starts
it and stops it at the end.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self


def stop_on_signals() -> threading.Event:
    """An event set by SIGINT or SIGTERM (the handlers are installed now)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def hold(stop: threading.Event, exited: Callable[[], str | None], logs: Path) -> int:
    """Wait until `stop` is set (0), or until `exited()` names a part that exited (1, after
    saying which and where its logs are)."""
    while not stop.wait(1.0):
        gone = exited()
        if gone:
            print(f"error: {gone} exited; logs in {logs}", file=sys.stderr)
            return 1
    return 0


class Parts:
    """Processes started and stopped together; `with parts:` starts them, then stops them."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def log_tail(path: Path, lines: int = 25) -> str:
    """The last `lines` lines of a part's log file ("" when it cannot be read), for the message
    that says why the part did not start."""
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except OSError:
        return ""
