"""The operator's Prometheus metrics and their `/metrics` endpoint (prometheus_client).

    serve(host, port, jobs, queue_depth) -> stop()  # the HTTP server thread (controller.main)
    status_written(namespace, before, after)         # after each status write (StatusWriter)
    job_deleted(namespace)                           # a TFJob DELETED watch event (triggers)
    api_error(verb, resource, code)                  # a non-2xx API answer (kube)
    timed_pass()                                     # context manager around a pass (triggers)
    pods_created(job, plan, failed, now)             # after a pass's creations (reconciler)
    progress_read(result)                            # one read of a chief's progress
    creation_slots(namespace, creating, waiting)     # the per-namespace creation limit's state
    REGISTRY                                         # everything above (tests render it)

Kubeflow's training-operator counters, same names, help and labels (`job_namespace`,
`framework`="tensorflow"), so its dashboards and alerts work unchanged:
    training_operator_jobs_created_total      a job's first status write (condition Created)
    training_operator_jobs_successful_total   condition Succeeded became True
    training_operator_jobs_failed_total       condition Failed became True
    training_operator_jobs_restarted_total    condition Restarting became True
    training_operator_jobs_deleted_total      a TFJob this operator knew was deleted
Each counts a transition the operator itself wrote, once, when the apiserver accepted the write:
a status write that loses a conflict counts nothing and the next pass counts it; a restarted
operator does not count its jobs again (Kubeflow counts "created" again for every job on each
start, and "deleted" only for its own TTL deletions; TaaS counts every deletion it sees, the
TTL's included). Counters are per process: with peering, sum over the replicas.

TaaS's own:
    taas_operator_jobs{job_namespace,state}                gauge, cached TFJobs by the State
                                                           column (last condition; Pending: none)
    taas_operator_pass_duration_seconds{outcome}           histogram, one pass (ok | error)
    taas_operator_workqueue_depth                          gauge, jobs with a pass requested or
                                                           running
    taas_operator_api_errors_total{verb,resource,code}     counter, non-2xx API answers raised
    taas_operator_pod_recreations_total{job_namespace,reason}
                                                           counter, pods deleted and recreated
                                                           after a failure (status.recreations;
                                                           reason: Error, OOMKilled, Evicted...)
    taas_operator_job_scale_changes_total{job_namespace,direction}
                                                           counter, Worker replicas changed
                                                           (status.workerReplicas; up | down)
    taas_operator_job_pods_created_seconds                 histogram, TFJob creationTimestamp ->
                                                           the pass after which all its pods exist
                                                           (once per job, by the process that
                                                           wrote its Created condition)
    taas_operator_jobs_being_created{job_namespace}        gauge, jobs whose pods are not all made
    taas_operator_jobs_waiting_to_create{job_namespace}    gauge, jobs held by
                                                           --creating-per-namespace
    taas_operator_progress_reads_total{result}             counter, reads of a chief's progress:
                                                           ok | unreachable | invalid

No Kubernetes here; the hooks are one line at each call site, so the rest of the controller
reads as before. The server is prometheus_client's own (a thread), on `health_host`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from taas_operator.api.constants import (
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_SUCCEEDED,
)
from taas_operator.api.models import TFJob
from taas_operator.api.state import body_state
from taas_operator.api.text import printable
from taas_operator.planner import Plan

FRAMEWORK = "tensorflow"
REGISTRY = CollectorRegistry(auto_describe=True)
# No `*_created` timestamp series next to every counter: Kubeflow's (Go) counters have none, and
# dashboards built for them should see the same series.
disable_created_metrics()

_JOB_LABELS = ["job_namespace", "framework"]
JOBS_CREATED = Counter(
    "training_operator_jobs_created",
    "Counts number of jobs created",
    _JOB_LABELS,
    registry=REGISTRY,
)
JOBS_DELETED = Counter(
    "training_operator_jobs_deleted",
    "Counts number of jobs deleted",
    _JOB_LABELS,
    registry=REGISTRY,
)
JOBS_SUCCESSFUL = Counter(
    "training_operator_jobs_successful",
    "Counts number of jobs successful",
    _JOB_LABELS,
    registry=REGISTRY,
)
JOBS_FAILED = Counter(
    "training_operator_jobs_failed", "Counts number of jobs failed", _JOB_LABELS, registry=REGISTRY
)
JOBS_RESTARTED = Counter(
    "training_operator_jobs_restarted",
    "Counts number of jobs restarted",
    _JOB_LABELS,
    registry=REGISTRY,
)
PASS_SECONDS = Histogram(
    "taas_operator_pass_duration_seconds",
    "Duration of one pass over one TFJob (read, plan, write, create/delete)",
    ["outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
API_ERRORS = Counter(
    "taas_operator_api_errors",
    "Kubernetes API calls of the operator answered with an error status",
    ["verb", "resource", "code"],
    registry=REGISTRY,
)
POD_RECREATIONS = Counter(
    "taas_operator_pod_recreations",
    "Pods the operator deleted and recreated after a failure, by the failure's reason",
    ["job_namespace", "reason"],
    registry=REGISTRY,
)
SCALE_CHANGES = Counter(
    "taas_operator_job_scale_changes",
    "Changes of a TFJob's Worker replicas (the scale subresource), by direction (up, down)",
    ["job_namespace", "direction"],
    registry=REGISTRY,
)
PODS_CREATED_SECONDS = Histogram(
    "taas_operator_job_pods_created_seconds",
    "Seconds from a TFJob's creation to the end of the pass after which all its pods exist",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)
JOBS_BEING_CREATED = Gauge(
    "taas_operator_jobs_being_created",
    "TFJobs whose pods are not all made yet, by namespace (bounded by --creating-per-namespace)",
    ["job_namespace"],
    registry=REGISTRY,
)
JOBS_WAITING_TO_CREATE = Gauge(
    "taas_operator_jobs_waiting_to_create",
    "TFJobs waiting because their namespace has --creating-per-namespace jobs being created",
    ["job_namespace"],
    registry=REGISTRY,
)
PROGRESS_READS = Counter(
    "taas_operator_progress_reads",
    "Reads of a chief's training progress, by result",
    ["result"],
    registry=REGISTRY,
)

_TRANSITIONS = (
    (COND_CREATED, JOBS_CREATED),
    (COND_SUCCEEDED, JOBS_SUCCESSFUL),
    (COND_FAILED, JOBS_FAILED),
    (COND_RESTARTING, JOBS_RESTARTED),
)


def _true(status: Mapping[str, Any] | None, type_: str) -> bool:
    conditions = (status or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


def _recreations(status: Mapping[str, Any] | None) -> dict[str, tuple[int, str]]:
    found = (status or {}).get("recreations") or {}
    return {
        pod: (int(r.get("count") or 0), str(r.get("lastReason") or "Unknown"))
        for pod, r in found.items()
        if isinstance(r, dict)
    }


def status_written(
    namespace: str, before: Mapping[str, Any] | None, after: Mapping[str, Any]
) -> None:
    """Count what a status write accepted by the apiserver changed (`before`: the status it
    replaced, recreations kept in memory included)."""
    for type_, counter in _TRANSITIONS:
        if _true(after, type_) and not _true(before, type_):
            counter.labels(namespace, FRAMEWORK).inc()
    old = _recreations(before)
    for pod, (count, reason) in _recreations(after).items():
        added = count - old.get(pod, (0, ""))[0]
        if added > 0:
            POD_RECREATIONS.labels(namespace, printable(reason)).inc(added)
    was, now = (before or {}).get("workerReplicas"), after.get("workerReplicas")
    if isinstance(was, int) and isinstance(now, int) and was != now:
        SCALE_CHANGES.labels(namespace, "up" if now > was else "down").inc()


def job_deleted(namespace: str) -> None:
    """A TFJob the operator knew was deleted (by anyone: a user, its TTL)."""
    JOBS_DELETED.labels(namespace, FRAMEWORK).inc()


def api_error(verb: str, resource: str, code: int) -> None:
    """An API call answered with a non-2xx status that the operator raised as an error."""
    API_ERRORS.labels(verb, resource, str(code)).inc()


def progress_read(result: str) -> None:
    """One read of a chief's progress: ok, unreachable or invalid."""
    PROGRESS_READS.labels(result).inc()


def creation_slots(namespace: str, creating: int, waiting: int) -> None:
    """The namespace's jobs being created and waiting to be (`reconcile.creating`)."""
    JOBS_BEING_CREATED.labels(namespace).set(creating)
    JOBS_WAITING_TO_CREATE.labels(namespace).set(waiting)


@contextlib.contextmanager
def timed_pass() -> Iterator[None]:
    """Time the pass inside; outcome `error` when it raises."""
    started = time.perf_counter()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    finally:
        PASS_SECONDS.labels(outcome).observe(time.perf_counter() - started)


class _PodsCreated:
    """Jobs whose Created condition this process wrote and whose pods are not all there yet."""

    def __init__(self) -> None:
        self.waiting: set[str] = set()  # uids

    def observe(self, job: TFJob, plan: Plan, failed: bool, now: datetime) -> None:
        uid = job.metadata.uid or ""
        if not job.status.is_true(COND_CREATED) and plan.status.is_true(COND_CREATED):
            self.waiting.add(uid)  # this pass writes Created: the clock is ours to stop
        if uid not in self.waiting or failed:
            return
        self.waiting.discard(uid)
        if plan.status.finished or job.spec.run_policy.suspend:
            return  # ended or suspended before its pods existed: nothing to measure
        created = job.metadata.creation_timestamp
        if created:
            start = datetime.fromisoformat(created.replace("Z", "+00:00"))
            PODS_CREATED_SECONDS.observe(max((now - start).total_seconds(), 0.0))


_PODS_CREATED = _PodsCreated()


def pods_created(job: TFJob, plan: Plan, failed: bool, now: datetime | None = None) -> None:
    """After a pass carried out `plan` (`failed`: some creation failed): stop the job's
    creation-to-all-pods clock when every pod it wants now exists."""
    _PODS_CREATED.observe(job, plan, failed, now or datetime.now(UTC))


class _Live(Collector):
    """Gauges read when scraped: the cached jobs by state, the work queue's depth."""

    def __init__(
        self, jobs: Callable[[], Iterable[Mapping[str, Any]]], queue_depth: Callable[[], int]
    ) -> None:
        self.jobs, self.queue_depth = jobs, queue_depth

    def collect(self) -> Iterator[GaugeMetricFamily]:
        states = GaugeMetricFamily(
            "taas_operator_jobs",
            "TFJobs the operator has cached, by the State column (api.state)",
            labels=["job_namespace", "state"],
        )
        counts: dict[tuple[str, str], int] = {}
        for body in list(self.jobs()):
            namespace = str((body.get("metadata") or {}).get("namespace") or "default")
            # (status text anyone with tfjobs/status may write: printable)
            state = printable(body_state(body.get("status")).shown)
            counts[(namespace, state)] = counts.get((namespace, state), 0) + 1
        for (namespace, state), count in sorted(counts.items()):
            states.add_metric([namespace, state], count)
        yield states
        depth = GaugeMetricFamily(
            "taas_operator_workqueue_depth", "TFJobs with a pass requested or running"
        )
        depth.add_metric([], self.queue_depth())
        yield depth


def serve(
    host: str,
    port: int,
    jobs: Callable[[], Iterable[Mapping[str, Any]]],
    queue_depth: Callable[[], int],
) -> Callable[[], None]:
    """Serve REGISTRY (plus the live gauges) at http://host:port/metrics; return a stop."""
    live = _Live(jobs, queue_depth)
    REGISTRY.register(live)
    server, thread = start_http_server(port, addr=host, registry=REGISTRY)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        REGISTRY.unregister(live)
        thread.join(5)

    return stop
