"""Watches pods and services of one namespace and records when each first appeared.

    ObjectRecord(kind, name, job, uid, seen_at)
    Observer(api_client, namespace).start()
    Observer.wait_for(expected: dict[str, int], timeout_s) -> bool   # job -> objects per kind
    Observer.done_times(expected) -> dict[str, float]                 # job -> time all existed
    Observer.recreated() -> list[str]       # objects seen with more than one uid (kind/name)
    Observer.stop()                         # or: with Observer(...).start() as observer:

Times are `time.monotonic()` when the watch event arrived here, so they compare with the
harness's create times; the job comes from the `training.kubeflow.org/job-name` label that
both controllers and the floor set.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch

JOB_LABEL = "training.kubeflow.org/job-name"
KINDS = ("pod", "service")


@dataclass(frozen=True)
class ObjectRecord:
    """First sighting of one object (one uid)."""

    kind: str
    name: str
    job: str
    uid: str
    seen_at: float


class Observer:
    """Two watch threads (pods, services) feeding first-seen records."""

    def __init__(self, api_client: client.ApiClient, namespace: str) -> None:
        self.namespace = namespace
        self._core = client.CoreV1Api(api_client)
        self._lock = threading.Condition()
        self._first: dict[tuple[str, str], ObjectRecord] = {}
        self._uids: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._deleted: dict[tuple[str, str], int] = defaultdict(int)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []

    # -- watching ------------------------------------------------------------------------------
    def _lister(self, kind: str) -> Callable[..., Any]:
        return (
            self._core.list_namespaced_pod if kind == "pod" else self._core.list_namespaced_service
        )

    def _record(self, kind: str, event_type: str, obj: Any, now: float) -> None:
        meta = obj.metadata
        key = (kind, meta.name)
        with self._lock:
            if event_type == "DELETED":
                self._deleted[key] += 1
            elif meta.uid not in self._uids[key]:
                self._uids[key].add(meta.uid)
                if key not in self._first:
                    job = (meta.labels or {}).get(JOB_LABEL, "")
                    self._first[key] = ObjectRecord(kind, meta.name, job, meta.uid, now)
            self._lock.notify_all()

    def _watch(self, kind: str, resource_version: str) -> None:
        lister = self._lister(kind)
        while not self._stop.is_set():
            try:
                for event in watch.Watch().stream(
                    lister,
                    self.namespace,
                    resource_version=resource_version,
                    timeout_seconds=20,
                    _request_timeout=30,
                ):
                    now = time.monotonic()
                    obj = event["object"]
                    resource_version = obj.metadata.resource_version or resource_version
                    self._record(kind, event["type"], obj, now)
                    if self._stop.is_set():
                        return
            except client.ApiException as err:
                if err.status == 410:
                    resource_version = self._list(kind)
                else:
                    self.errors.append(f"{kind} watch: {err.status} {err.reason}")
                    self._stop.wait(1.0)
            except Exception as err:  # connection reset, apiserver restart: watch again
                if self._stop.is_set():
                    return
                self.errors.append(f"{kind} watch: {type(err).__name__}: {err}")
                self._stop.wait(1.0)
                try:
                    resource_version = self._list(kind)
                except Exception:
                    continue

    def _list(self, kind: str) -> str:
        listing = self._lister(kind)(self.namespace)
        now = time.monotonic()
        for obj in listing.items:
            self._record(kind, "ADDED", obj, now)
        return str(listing.metadata.resource_version)

    def start(self) -> Observer:
        for kind in KINDS:
            resource_version = self._list(kind)
            thread = threading.Thread(
                target=self._watch,
                args=(kind, resource_version),
                daemon=True,
                name=f"observe-{kind}",
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- queries -------------------------------------------------------------------------------
    def counts(self) -> dict[str, dict[str, int]]:
        """job -> kind -> distinct object names seen."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(KINDS, 0))
        with self._lock:
            for record in self._first.values():
                out[record.job][record.kind] += 1
        return dict(out)

    def _complete(self, expected: dict[str, int]) -> bool:
        counts = self.counts()
        return all(
            counts.get(job, {}).get(kind, 0) >= n for job, n in expected.items() for kind in KINDS
        )

    def wait_for(self, expected: dict[str, int], timeout_s: float) -> bool:
        """Block until every job has `n` pods and `n` services, or the timeout."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not self._complete(expected):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 1.0))
        return True

    def done_times(self, expected: dict[str, int]) -> dict[str, float]:
        """job -> when its last expected object appeared (only complete jobs)."""
        per_job: dict[str, list[float]] = defaultdict(list)
        with self._lock:
            for record in self._first.values():
                per_job[record.job].append(record.seen_at)
        return {
            job: max(per_job[job])
            for job, n in expected.items()
            if len(per_job.get(job, [])) >= 2 * n
        }

    def records(self) -> list[ObjectRecord]:
        with self._lock:
            return list(self._first.values())

    def recreated(self) -> list[str]:
        """`kind/name` of objects that appeared with more than one uid (deleted and made
        again), which a controller restart must not cause."""
        with self._lock:
            return sorted(f"{k}/{n}" for (k, n), uids in self._uids.items() if len(uids) > 1)

    def deleted(self) -> list[str]:
        with self._lock:
            return sorted(f"{k}/{n}" for (k, n) in self._deleted)
