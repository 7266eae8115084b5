"""What people see during `taas run`: the terminal (`taas_operator.terminal.Display`: replica
logs, the live replica table, notes) plus the planner's events, and every line and event handed
to the run's observer (`taas run --dashboard`) too.

    RunDisplay(stream, color, live, logs_dir, prefix_job, observer: OutputObserver | None)
        .line(job, pod, raw: bytes)   as Display.line (TensorFlow's noise off the terminal,
                                      explained once: local.noise), and to the observer
        .event(job, event)            a planner event: `taas: Normal TFJobRunning: ...`
        .note(text)  .warn(text)  .table(lines)  .final(text)  .close()   as Display's

    OutputObserver   # the part of a local.observer.RunObserver the display feeds: line, event
    logs_dir(path) -> Path   # --logs-dir checked before anything starts: InputError naming it
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Protocol

from taas_operator.api import TFJob
from taas_operator.api.text import printable
from taas_operator.documents import InputError
from taas_operator.local.noise import NoiseFilter
from taas_operator.planner import Event
from taas_operator.terminal import Display


def logs_dir(path: str) -> Path:
    """`path` as a directory this process can write logs into (created if missing)."""
    folder = Path(path)
    fix = "fix: give --logs-dir a directory you can write to (it is created if missing)"
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--logs-dir {path}: not a directory; {fix}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".taas-write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise InputError(f"--logs-dir {path}: cannot write there ({exc.strerror}); {fix}") from None
    return folder


class OutputObserver(Protocol):
    """Is handed every log line and planner event of a local run (from the runner's threads)."""

    def line(self, job: str, pod: str, raw: bytes) -> None: ...

    def event(self, job: TFJob, type_: str, reason: str, message: str) -> None: ...


class RunDisplay(Display):
    """The terminal of `taas run`, telling its observer of every line and event too."""

    def __init__(
        self,
        stream: IO[str],
        *,
        color: bool,
        live: bool,
        logs_dir: str | None = None,
        prefix_job: bool = False,
        observer: OutputObserver | None = None,
    ) -> None:
        super().__init__(stream, color=color, live=live, logs_dir=logs_dir, prefix_job=prefix_job)
        self.observer = observer
        self.noise = NoiseFilter()

    def line(self, job: str, pod: str, raw: bytes, show: bool = True) -> None:
        """One output line of a replica: to the observer and its log file, and to the terminal
        unless it is TensorFlow's noise (``local.noise``: explained once in a note)."""
        if self.observer is not None:
            self.observer.line(job, pod, raw)
        verdict = self.noise.judge(pod, raw.decode("utf-8", errors="replace"))
        if verdict.note is not None:
            self.note(verdict.note)
        super().line(job, pod, raw, show=show and verdict.show)

    def event(self, job: TFJob, event: Event) -> None:
        """An event the planner records on the job (in a cluster: a Kubernetes Event)."""
        if self.observer is not None:
            self.observer.event(job, event.type, event.reason, event.message)
        self.note(printable(f"{event.type} {event.reason}: {event.message}"))
