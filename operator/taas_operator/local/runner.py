"""`taas run`: drive TFJobs on this machine with the operator's own planner.

    RunOptions(logs_dir=None, color=True, table=True, host_network=False,
               allow_oversubscribe=False)
    run_jobs(jobs: Sequence[TFJob], options: RunOptions, observer=None) -> int   # the exit code

Before anything starts (InputError, exit 2, on any problem): the run must fit this
machine (`local.capacity`; `allow_oversubscribe` turns a misfit into a warning), --logs-dir must
be writable, every pod must be startable (`JobRun.preflight`, which also warns about what is
not applied).
Then each job gets a private network namespace (`local.netns`): its replicas reach each other on
127.0.0.1 and nothing outside the job reaches them. Where none can be made, one warning says why
and the replicas use the host network; `host_network` asks for that instead.

Each job is a `local.job_run.JobRun` (its pods, its status, the planner's plans) with one free
port on 127.0.0.1 per replica. The loop (every 0.1 s, main thread only) steps every job, redraws
the table when something changed, and ends when every job is done. An `observer`
(`local.observer.RunObserver`, e.g. `taas run --dashboard`'s page) is told of every change, log
line and event.

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
from taas_operator.documents import InputError
from taas_operator.local.capacity import Machine, check_fit
from taas_operator.local.display import RunDisplay, logs_dir
from taas_operator.local.environment import EnvPolicy
from taas_operator.local.job_run import JobRun
from taas_operator.local.netns import NetworkUnavailable, PrivateNetwork
from taas_operator.local.observer import RunObserver
from taas_operator.terminal import format_table

TICK_SECONDS = 0.1
EXIT_SUCCEEDED, EXIT_FAILED = 0, 1
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RunOptions(BaseModel):
    """How `taas run` runs and shows things."""

    logs_dir: str | None = None
    color: bool = True
    table: bool = True
    host_network: bool = False
    allow_oversubscribe: bool = False
    #: What of the runner's environment the replicas get (default: the basics only).
    env: EnvPolicy = EnvPolicy()


def _table(runs: Sequence[JobRun]) -> list[str]:
    header = ["REPLICA", "STATE", "RESTARTS", "EXIT", "PID", "ADDRESS"]
    lines = format_table(header, [row for run in runs for row in run.table_rows()])
    jobs = ["TFJOB", "STATE", "PROGRESS", "ETA", "MESSAGE"]
    return lines + format_table(jobs, [run.job_row() for run in runs])


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


def run_jobs(
    jobs: Sequence[TFJob],
    options: RunOptions,
    stream: Any = None,
    observer: RunObserver | None = None,
) -> int:
    """Run `jobs` to completion (or until stopped); return the exit code."""
    out = stream or sys.stdout
    fit = check_fit(jobs, Machine.here())
    if fit.problems and not options.allow_oversubscribe:
        raise InputError(
            f"{fit.misfit}. Fix: fewer replicas, resources.requests.memory in the tensorflow "
            f"container if yours need less, or taas run --allow-oversubscribe to start them anyway"
        )
    if options.logs_dir:
        logs_dir(options.logs_dir)
    live = options.table and out.isatty()
    display = RunDisplay(
        out,
        color=options.color and out.isatty(),
        live=live,
        logs_dir=options.logs_dir,
        prefix_job=len(jobs) > 1,
        observer=observer,
    )
    if fit.problems:
        display.warn(f"{fit.misfit}; starting anyway (--allow-oversubscribe)")
    for warning in fit.warnings:
        display.warn(f"{fit.what}: {warning}")
    runs = [JobRun(job, display, options.env) for job in jobs]
    try:
        for run in runs:
            run.preflight()  # InputError here: nothing has started yet
    except BaseException:
        for run in runs:
            run.progress.close()  # its private directory; nothing else exists yet
        raise
    width = shutil.get_terminal_size().columns
    stopped: int | None = None
    _private_networks(runs, options.host_network, display)
    if observer is not None:
        observer.started(runs)
    try:
        with _stop_signals() as received:
            while not all(r.done for r in runs) and not received:
                now = datetime.now(UTC)
                changed = [run.step(now) for run in runs]
                if observer is not None:
                    for run, moved in zip(runs, changed, strict=True):
                        if moved:
                            observer.changed(run)
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
                        if observer is not None:
                            observer.changed(run)
                    time.sleep(TICK_SECONDS)
    finally:
        for run in runs:
            run.kill()
            _poll_only(run)
            for pod in run.pods.values():
                pod.flush_logs(timeout=1.0)
            if run.network is not None:
                run.network.close()
            run.progress.close()
        if observer is not None:
            observer.finished(runs)
        display.final(_report(runs, stopped))
        display.close()
    return _exit_code(runs, stopped)


def _private_networks(runs: Sequence[JobRun], host_network: bool, display: RunDisplay) -> None:
    """A private network namespace per job, or one line saying why the host network is used."""
    exposed = "TensorFlow's servers then listen on every interface of this machine"
    if host_network:
        display.note(f"--host-network: the replicas use this machine's network; {exposed}")
        return
    for run in runs:
        try:
            run.network = PrivateNetwork.create()
        except NetworkUnavailable as exc:
            for made in runs:  # all jobs alike: every one on the host network
                if made.network is not None:
                    made.network.close()
                    made.network = None
            display.warn(
                f"no private network for the replicas ({exc}), so {exposed}, reachable from "
                f"other machines. Fix: allow user namespaces (sysctl user.max_user_namespaces, "
                f"kernel.unprivileged_userns_clone) or run as root; --host-network accepts this"
            )
            return
    kind = runs[0].network.kind if runs and runs[0].network else "network namespace"
    display.note(
        f"each job's replicas share a private network ({kind}): 127.0.0.1 is the job's own, "
        f"nothing outside the job connects to them, they reach no network outside it (Unix "
        f"socket files they may open excepted; --host-network turns this off)"
    )


def _poll_only(run: JobRun) -> None:
    """Let pods being deleted reach their grace deadline, without reconciling."""
    now = datetime.now(UTC)
    for pod in run.pods.values():
        pod.poll(now)
