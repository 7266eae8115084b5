"""`taas run --dashboard`: a local run with its job page, the page `taas dashboard` serves for a
cluster, fed by the runner's own state (dashboard.local_source).

    run_with_dashboard(jobs, options, port, host="127.0.0.1", keep_serving=False) -> exit code

The server is bound before the first replica starts (a taken port is exit 2, nothing started),
its URL is printed on stderr, and the run's exit code is `taas run`'s. `keep_serving` leaves the
page up after the run ends (it then says so), until Ctrl-C.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence

from taas_operator.api import TFJob
from taas_operator.dashboard.access import TokenGate
from taas_operator.dashboard.local_source import LocalSource
from taas_operator.dashboard.serve import Background
from taas_operator.dashboard.server import ServerSettings
from taas_operator.local.runner import RunOptions, run_jobs


def run_with_dashboard(
    jobs: Sequence[TFJob],
    options: RunOptions,
    port: int,
    host: str = "127.0.0.1",
    keep_serving: bool = False,
) -> int:
    """Run `jobs` as `taas run` does, serving their page meanwhile; the run's exit code."""
    source = LocalSource()
    gate = TokenGate(source)
    server = Background.start(gate, ServerSettings(host=host, port=port, read_only=True))
    print(f"taas: dashboard: {server.entry} (this run's job page)", file=sys.stderr, flush=True)
    try:
        code = run_jobs(jobs, options, observer=source)
        if keep_serving:
            print(
                f"taas: dashboard: still serving {server.entry}; Ctrl-C stops it",
                file=sys.stderr,
                flush=True,
            )
            _wait_for_stop()
        return code
    finally:
        server.stop()


def _wait_for_stop() -> None:
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
