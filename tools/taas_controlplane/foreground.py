"""Hold a started cluster in the foreground until Ctrl-C, SIGTERM or one of its parts exits.

    stop = stop_on_signals()           # before starting, so a Ctrl-C during start-up counts
    ... start ...
    return hold(stop, cluster.exited, cluster.directory)   # 0 when asked, 1 when a part died

`taas-controlplane up`, `cluster up` and `sim up` all wait this way. What they hold is a
`taas_controlplane.parts.Parts` (a control plane, a cluster, a simulated cluster, the
schedulers): `with parts:` starts it and stops it at the end.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path


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
