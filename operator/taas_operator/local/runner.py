"""`taas run`: drive TFJobs on this machine with the operator's own engine.

    RunOptions(logs_dir=None, color=True, table=True)
    run_jobs(jobs: Sequence[TFJob], options: RunOptions) -> int     # the exit code

Each job is a `local.job_run.JobRun` (its pods, its status, the engine's plans) with one free
port on 127.0.0.1 per replica. The loop (every 0.1 s, main thread only) steps every job, redraws
the table when something changed, and ends when every job is done.

SIGINT, SIGTERM and SIGHUP stop every replica (SIGTERM, then SIGKILL after the grace period;
a second signal kills at once) and the run ends as "stopped" with 128 + the signal number
(a job that had already finished keeps its own exit code).
Exit codes: 0 every job Succeeded, 1 one Failed, 2 input error (before anything starts).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import yaml
from pydantic import BaseModel

from taas_operator.api import TFJob
from taas_operator.local.display import Display, format_table
from taas_operator.local.job_run import JobRun

TICK_SECONDS = 0.1
EXIT_SUCCEEDED, EXIT_FAILED = 0, 1
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RunOptions(BaseModel):
    """How `taas run` shows things."""

    logs_dir: str | None = None
    color: bool = True
    table: bool = True


def _table(runs: Sequence[JobRun]) -> list[str]:
    header = ["REPLICA", "STATE", "RESTARTS", "EXIT", "PID", "ADDRESS"]
    lines = format_table(header, [row for run in runs for row in run.table_rows()])
    lines += [f"TFJob {run.job.name}: {run.condition()}" for run in runs]
    return lines


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[int]]:
    """Collect SIGINT/SIGTERM/SIGHUP numbers in a list instead of dying."""
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in _STOP_SIGNALS}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _report(runs: Sequence[JobRun], stopped: int | None) -> str:
    out = ["", *_table(runs), ""]
    for run in runs:
        status = {"status": run.job.status.to_dict()}
        out.append(f"# TFJob {run.job.namespace}/{run.job.name}, as the operator writes it:")
        out.append(yaml.safe_dump(status, sort_keys=False).rstrip())
    out.append("")
    for run in runs:
        st = run.job.status
        if stopped is not None and not st.finished:
            verdict = f"stopped by {signal.Signals(stopped).name} before it finished"
        elif st.is_true("Succeeded"):
            verdict = "Succeeded"
        elif st.is_true("Failed"):
            verdict = f"Failed: {st.condition('Failed').message}"  # type: ignore[union-attr]
        else:
            verdict = f"not run: {run.skipped}" if run.skipped else "unfinished"
        out.append(f"TFJob {run.job.name} {verdict}")
    return "\n".join(out) + "\n"


def _exit_code(runs: Sequence[JobRun], stopped: int | None) -> int:
    if stopped is not None and not all(r.job.status.finished for r in runs):
        return 128 + stopped
    if all(r.job.status.is_true("Succeeded") for r in runs):
        return EXIT_SUCCEEDED
    return EXIT_FAILED


def run_jobs(jobs: Sequence[TFJob], options: RunOptions, stream: Any = None) -> int:
    """Run `jobs` to completion (or until stopped); return the exit code."""
    out = stream or sys.stdout
    live = options.table and out.isatty()
    display = Display(
        out,
        color=options.color and out.isatty(),
        live=live,
        logs_dir=options.logs_dir,
        prefix_job=len(jobs) > 1,
    )
    runs = [JobRun(job, display) for job in jobs]
    for run in runs:
        run.preflight()  # InputError here: nothing has started yet
    width = shutil.get_terminal_size().columns
    stopped: int | None = None
    try:
        with _stop_signals() as received:
            while not all(r.done for r in runs) and not received:
                now = datetime.now(UTC)
                changed = [run.step(now) for run in runs]
                if options.table and any(changed):
                    lines = _table(runs)
                    display.table([line[:width] for line in lines] if live else lines)
                time.sleep(TICK_SECONDS)
            if received:
                stopped = received[0]
                display.note(f"{signal.Signals(stopped).name}: stopping every replica")
                now = datetime.now(UTC)
                for run in runs:
                    run.stop(now)
                while any(r.alive for r in runs) and len(received) < 2:
                    for run in runs:
                        _poll_only(run)
                    time.sleep(TICK_SECONDS)
    finally:
        for run in runs:
            run.kill()
            _poll_only(run)
            for pod in run.pods.values():
                pod.flush_logs(timeout=1.0)
        display.final(_report(runs, stopped))
        display.close()
    return _exit_code(runs, stopped)


def _poll_only(run: JobRun) -> None:
    """Let pods being deleted reach their grace deadline, without reconciling."""
    now = datetime.now(UTC)
    for pod in run.pods.values():
        pod.poll(now)
