"""What a watcher of `taas run` is told, beyond the terminal: the seam `taas run --dashboard`
plugs into (the dashboard sits above this layer, so the runner only knows this protocol).

    RunObserver
        .started(runs)                          # once, before the loop; from the main thread
        .changed(run)                           # a job's status or pods changed; main thread
        .line(job, pod, raw)                    # one log line; from a replica's reader thread
        .event(job, type_, reason, message)     # a planner event, as the operator records it
        .finished(runs)                         # once, after every replica has stopped

Calls come from the runner's threads: an observer hands what it needs over to its own thread and
returns at once (it must never block the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from taas_operator.local.display import OutputObserver
from taas_operator.local.job_run import JobRun


class RunObserver(OutputObserver, Protocol):
    """Receives a local run's changes, and (as an OutputObserver, from the run's display) its
    log lines and events."""

    def started(self, runs: Sequence[JobRun]) -> None: ...

    def changed(self, run: JobRun) -> None: ...

    def finished(self, runs: Sequence[JobRun]) -> None: ...
