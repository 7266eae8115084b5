"""What the cluster commands print: the tables (the look of `taas run` and `kubectl get`) and the
live view of `taas submit` / `taas logs -f`.

    jobs_table(jobs, now, all_namespaces=False) -> list[str]   # taas get
    job_lines(job, pods) -> list[str]                          # replicas + the job row
    age(created, now) -> str                                   # kubectl's AGE column
    follow_job(client, job, display, poll_s=1.0) -> TFJob      # submit: table, logs, events

`follow_job` draws the replica table and the job row (STATE, PROGRESS, ETA: the columns `taas
run` and `kubectl get tfjobs` show, from `planner.progress`) as `taas run` does (a footer on a
TTY, printed on change elsewhere), prints the job's events as `taas:` notes and every
replica's log lines with `[worker-1]` prefixes, until the job has Succeeded or Failed and its
logs are drained.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from taas_operator.api.models import TFJob
from taas_operator.api.state import STATE_WAITING, job_state
from taas_operator.api.text import printable
from taas_operator.apiserver.errors import ApiError
from taas_operator.client.jobs import TFJobClient
from taas_operator.client.models import ReplicaPod
from taas_operator.planner import progress_columns
from taas_operator.terminal import Display, format_table

ENDING_EVENT_WAIT_S = 5.0


def age(created: str | None, now: datetime) -> str:
    """'13s', '5m', '3h', '2d', like kubectl's AGE (two units below a day: '3h4m')."""
    if not created:
        return "<unknown>"
    start = datetime.fromisoformat(created.replace("Z", "+00:00"))
    seconds = max(int((now - start).total_seconds()), 0)
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 24:
        return f"{hours}h{minutes % 60}m" if hours < 8 and minutes % 60 else f"{hours}h"
    return f"{hours // 24}d"


def _replicas(job: TFJob, rtype: str) -> str:
    spec = job.spec.tf_replica_specs.get(rtype)  # type: ignore[call-overload]
    return str(spec.replicas) if spec is not None else ""


def not_running(job: TFJob) -> tuple[str, str] | None:
    """(reason, message) while the job waits (state Waiting: the scheduler cannot place some
    replicas, an image cannot be pulled, its gang or its queue waits...), else None."""
    state = job_state(job.status)
    if state.state != STATE_WAITING:
        return None
    return (state.reason or STATE_WAITING, state.message)


def jobs_table(jobs: Sequence[TFJob], now: datetime, all_namespaces: bool = False) -> list[str]:
    """NAME STATE REASON WORKERS PS PROGRESS ETA AGE, the columns of `kubectl get tfjobs`
    (`api.state`: what the job is doing and why)."""
    header = ["NAME", "STATE", "REASON", "WORKERS", "PS", "PROGRESS", "ETA", "AGE"]
    rows = []
    for job in jobs:
        progress, eta = progress_columns(job.status)
        state = job_state(job.status)
        row = [
            job.name,
            state.state,  # empty, as kubectl shows it, before the operator's first pass
            state.reason,
            _replicas(job, "Worker"),
            _replicas(job, "PS"),
            progress,
            eta,
            age(job.metadata.creation_timestamp, now),
        ]
        rows.append([job.namespace, *row] if all_namespaces else row)
    return format_table(["NAMESPACE", *header] if all_namespaces else header, rows)


def replica_lines(job: TFJob, pods: Sequence[ReplicaPod]) -> list[str]:
    """REPLICA STATE RESTARTS EXIT NODE IP, one row per pod ([] for none)."""
    header = ["REPLICA", "STATE", "RESTARTS", "EXIT", "NODE", "IP"]
    rows = [
        [
            f"{job.name}/{pod.replica}",
            pod.state,
            str(pod.restarts),
            "" if pod.exit_code is None else str(pod.exit_code),
            pod.node or "",
            pod.pod_ip or "",
        ]
        for pod in pods
    ]
    return format_table(header, rows) if rows else []


def job_lines(job: TFJob, pods: Sequence[ReplicaPod]) -> list[str]:
    """The replica table and the job row, as `taas run` draws them."""
    progress, eta = progress_columns(job.status)
    true = [c for c in job.status.conditions if c.status == "True"]
    state = job_state(job.status).shown
    row = [job.name, state, progress, eta, true[-1].message if true else ""]
    job_row = format_table(["TFJOB", "STATE", "PROGRESS", "ETA", "MESSAGE"], [row])
    return replica_lines(job, pods) + job_row


def follow_job(client: TFJobClient, job: TFJob, display: Display, poll_s: float = 1.0) -> TFJob:
    """Show the job live until it ends; return its final state."""
    logs = threading.Thread(
        target=_print_logs, args=(client, job, display), daemon=True, name="taas-logs"
    )
    logs.start()
    seen: set[tuple[str, int]] = set()
    while True:
        job = client.get(job.name, job.namespace)
        pods = client.pods(job.name, job.namespace)
        reasons = _new_events(client, job, display, seen)
        display.table(job_lines(job, pods))
        if job.status.finished:
            break
        time.sleep(poll_s)
    logs.join()  # the follower ends once the job has ended and its streams are drained
    # The operator posts the ending event right after the status write that ended the job.
    ending = job.status.conditions[-1].reason
    deadline = time.monotonic() + ENDING_EVENT_WAIT_S
    while ending not in reasons and time.monotonic() < deadline:
        time.sleep(0.2)
        reasons |= _new_events(client, job, display, seen)
    return job


def _new_events(
    client: TFJobClient, job: TFJob, display: Display, seen: set[tuple[str, int]]
) -> set[str]:
    """Print the job's events not printed yet; the reasons of every event seen so far."""
    reasons = set()
    for event in client.events(job.name, job.namespace):
        reasons.add(event.reason)
        if (event.name, event.count) not in seen:
            seen.add((event.name, event.count))
            display.note(printable(f"{event.type} {event.reason}: {event.message}"))
    return reasons


def _print_logs(client: TFJobClient, job: TFJob, display: Display) -> None:
    try:
        for line in client.logs(job.name, job.namespace, follow=True):
            display.line(job.name, line.pod, line.text.encode())
    except ApiError as err:  # the table goes on; the logs say why they stopped
        display.warn(f"logs: {err}")


def now_utc() -> datetime:
    """The time the tables are computed at."""
    return datetime.now(UTC)
