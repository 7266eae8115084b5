"""Training progress in a TFJob's status: the chief's report folded into `status.progress` at a
bounded rate, and the STATE / PROGRESS / ETA columns every table shows. Pure: no I/O.

    chief_slot(job) -> (replica type, index) | None  # the replica whose progress counts (tfjob)
    chief_pod(job, pods) -> ObservedPod | None      # its pod, while it runs
    progress_port(job) -> int                       # the TCP port that chief serves it on
    fold_progress(job, plan, report, now, *, interval, last_update=None)
                                                    # plan.status.progress (and requeue_at)
    progress_columns(status) -> (progress, eta)     # "40%", "1m35s" ("-" when unknown)
    format_eta(seconds) -> str                      # "24s", "1m35s", "2h03m"

Who reports: the trainer library's chief (Chief/Master, else worker 0: the pod labelled
job-role=master) publishes a `ProgressReport`; how it reaches an executor differs (the operator
reads GET /progress on the chief's pod IP, `taas run` a file the chief writes; see
`controller.reconcile.progress_poller` for why the operator pulls), what is done with it
is this module, for both. A program that does not use the library publishes nothing: no
`status.progress`, and nothing else changes.

The rate (the operator passes `interval` = 30 s by default): a report newer than the one in the
status is written at most once per `interval` on its own; when the lifecycle writes the status
anyway in the same pass (a condition, counts), a report at least `interval / 2` older than the
last one rides along, costing no write. `last_update` is the executor's own memory of its last
progress write, so the bound holds even where the CRD prunes `status.progress` (Kubeflow's own
CRD during a migration). A report that must wait sets `plan.requeue_at` to when it may go.

When the job ends: a report newer than the status's is taken whatever the rate (the pass that
sees the end writes anyway); Succeeded then shows 100% with ETA 0s (training ended, wherever it
stopped; `step` keeps the last reported), Failed keeps the percentage and drops the ETA.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from taas_operator.api.constants import (
    COND_SUCCEEDED,
    COND_SUSPENDED,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PROGRESS_PORT,
    PROGRESS_PORT_ENV,
)
from taas_operator.api.models import ScalarPoint, TFJob, TFJobProgress, TFJobStatus
from taas_operator.api.progress_report import ProgressReport
from taas_operator.planner.observed import ObservedPod
from taas_operator.planner.plan import Plan, status_changed
from taas_operator.tfjob.rules import chief_slot

#: Bounds on what a report may put into the status (the rest is dropped, not refused).
MAX_SCALARS = 16
MAX_POINTS = 5
MAX_SCALAR_NAME = 63


def chief_pod(job: TFJob, pods: list[ObservedPod]) -> ObservedPod | None:
    """The chief's pod while it runs (not being deleted), else None."""
    slot = chief_slot(job)
    for pod in pods:
        if (pod.replica_type, pod.index) == slot and pod.phase == "Running" and not pod.deleting:
            return pod
    return None


def final_report(job: TFJob, pods: list[ObservedPod]) -> ProgressReport | None:
    """The last report the chief left in its termination message when it ended, if any (a
    program without the library leaves none, or text that is not a report: None)."""
    slot = chief_slot(job)
    for pod in pods:
        if (pod.replica_type, pod.index) != slot or not pod.termination_message:
            continue
        if pod.phase in ("Succeeded", "Failed") or pod.exit_code is not None:
            try:
                return ProgressReport.model_validate_json(pod.termination_message)
            except ValueError:
                return None
    return None


def progress_port(job: TFJob) -> int:
    """The port the chief serves progress on: its `tensorflow` container's TAAS_PROGRESS_PORT
    when the template sets it to a port number, else DEFAULT_PROGRESS_PORT (2223)."""
    slot = chief_slot(job)
    if slot is None:
        return DEFAULT_PROGRESS_PORT
    for container in job.spec.tf_replica_specs[slot[0]].containers():
        if container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        for env in container.get("env") or []:
            value = str(env.get("value") or "") if isinstance(env, dict) else ""
            if env.get("name") == PROGRESS_PORT_ENV and value.isdigit():
                port = int(value)
                return port if 0 < port < 65536 else DEFAULT_PROGRESS_PORT
    return DEFAULT_PROGRESS_PORT


def format_eta(seconds: float) -> str:
    """A duration as the trainer's progress lines write it: 24s, 1m35s, 2h03m."""
    whole = max(int(seconds), 0)
    if whole >= 3600:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    if whole >= 60:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole}s"


def _scalars(report: ProgressReport) -> dict[str, list[ScalarPoint]]:
    kept: dict[str, list[ScalarPoint]] = {}
    for name, points in report.scalars.items():
        if len(kept) >= MAX_SCALARS:
            break
        if name and len(name) <= MAX_SCALAR_NAME and points:
            kept[name] = points[-MAX_POINTS:]
    return kept


def progress_from(report: ProgressReport, now: datetime) -> TFJobProgress:
    """The status form of a report, written at `now`."""
    percent = min(100, max(0, math.floor(100 * report.global_step / report.max_steps)))
    eta = None if report.eta_seconds is None else max(round(report.eta_seconds), 0)
    return TFJobProgress(
        percent=percent,
        percent_text=f"{percent}%",
        step=report.global_step,
        max_steps=report.max_steps,
        loss=report.loss,
        examples_per_second=report.examples_per_second,
        eta_seconds=eta,
        eta=None if eta is None else format_eta(eta),
        scalars=_scalars(report),
        report_time=datetime.fromtimestamp(int(report.time), UTC),
        last_update_time=now,
    )


def _finish(status: TFJobStatus) -> None:
    """Succeeded: 100%, ETA 0s; Failed: no ETA (in place, idempotent)."""
    progress = status.progress
    if progress is None:
        return
    if status.is_true(COND_SUCCEEDED):
        progress.percent, progress.percent_text = 100, "100%"
        progress.eta_seconds, progress.eta = 0, format_eta(0)
    else:
        progress.eta_seconds = progress.eta = None


def _newer(report: ProgressReport, current: TFJobProgress | None) -> bool:
    if current is None or current.report_time is None:
        return True
    # The status keeps whole seconds: within the same second, a report that moved on is newer.
    stored, made = int(current.report_time.timestamp()), int(report.time)
    return made > stored or (made == stored and report.global_step != current.step)


def fold_progress(
    job: TFJob,
    plan: Plan,
    report: ProgressReport | None,
    now: datetime,
    *,
    interval: float,
    last_update: datetime | None = None,
) -> None:
    """Put `report` into `plan.status.progress` if the rate allows (see the module), else ask
    for a pass when it does (`plan.requeue_at`); finish the progress of an ended job. Updates
    `plan.status_changed`."""
    if plan.status is job.status:
        plan.status = job.status.model_copy(deep=True)
    status = plan.status
    if status.finished:
        if report is not None and not job.status.finished and _newer(report, status.progress):
            status.progress = progress_from(report, now)  # the last state rides along
        _finish(status)
    elif (
        report is not None
        and not status.is_true(COND_SUSPENDED)
        and _newer(report, status.progress)
    ):
        times = [
            t for t in (status.progress and status.progress.last_update_time, last_update) if t
        ]
        gap = interval / 2 if plan.status_changed else interval
        due = max(times) + timedelta(seconds=gap) if times else now
        if now >= due:
            status.progress = progress_from(report, now)
        elif plan.requeue_at is None or due < plan.requeue_at:
            plan.requeue_at = due
    plan.status_changed = status_changed(job.status, status)


def progress_columns(status: TFJobStatus) -> tuple[str, str]:
    """PROGRESS and ETA as `kubectl get tfjobs` prints them, "-" for unknown."""
    progress = status.progress
    if progress is None:
        return "-", "-"
    return progress.percent_text or "-", progress.eta or "-"
