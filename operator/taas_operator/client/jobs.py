"""TFJobClient: what Kubeflow's `TrainingClient` offers for TFJobs, typed, errors raised.

    client = TFJobClient(kubeconfig=None, context=None, namespace=None)
    client.create(job) -> TFJob           # a YAML path, a manifest dict or a TFJob model
    client.get(name) -> TFJob             client.list(all_namespaces=False) -> list[TFJob]
    client.wait(name, conditions=("Succeeded",), timeout=None, callback=None) -> TFJob
    client.logs(name, replica=None, follow=False) -> Iterator[LogLine]
    client.pods(name) -> list[ReplicaPod] client.events(name) -> list[JobEvent]
    client.delete(name)                   client.suspend(name) / client.resume(name) -> TFJob
    client.watch(namespace=None, all_namespaces=False, name=None, timeout=None)
        -> Iterator[JobChange]            # the jobs there now (ADDED), then every change
    client.is_succeeded(name) / is_failed(name) / is_running(name) -> bool

Every method takes `namespace=` (default: the client's, i.e. the kubeconfig context's).
Failures raise `taas_operator.client.errors` exceptions whose text names the fix; `wait`
raises `JobFailed` with the job's own failure message when the job fails before reaching the
conditions asked for (Kubeflow's SDK hid it: kubeflow/training-operator#1180, #1183) and
`WaitTimeout` with the last state. `create` checks a YAML path or a dict with the same rules
`kubectl apply` and `taas validate` apply before sending anything.
"""

from __future__ import annotations

import builtins
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import ValidationError

from taas_operator.api import TFJob, TFJobValidationError, parse_tfjob
from taas_operator.api.constants import (
    COND_FAILED,
    COND_RUNNING,
    COND_SUCCEEDED,
    GROUP,
    LABEL_JOB_NAME,
    PLURAL,
    VERSION,
)
from taas_operator.client.errors import ClientError, Invalid, JobFailed, JobNotFound, WaitTimeout
from taas_operator.client.kube import Connection, Expired, What
from taas_operator.client.logs import LogFollower
from taas_operator.client.models import JobChange, JobEvent, LogLine, ReplicaPod
from taas_operator.local.documents import InputError, load_tfjobs

Callback = Callable[[TFJob], None]
JobSource = str | os.PathLike[str] | dict[str, Any] | TFJob


def read_job(obj: dict[str, Any]) -> TFJob:
    """A TFJob as the cluster stores it (ClientError naming the job when it cannot be read)."""
    try:
        return TFJob.model_validate(obj)
    except ValidationError:
        pass
    try:  # stored under an older CRD: the operator's own reading (replica keys normalised)
        return parse_tfjob(obj)
    except TFJobValidationError as err:
        meta = obj.get("metadata") or {}
        raise ClientError(
            f"TFJob {meta.get('namespace')}/{meta.get('name')} cannot be read: {err.errors[0]}"
        ) from None


class TFJobClient:
    """TFJobs on one cluster (one kubeconfig context)."""

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        namespace: str | None = None,
    ) -> None:
        self.conn = Connection(kubeconfig, context)
        self.namespace = namespace or self.conn.namespace

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    # -- create, read, delete -------------------------------------------------------------------
    def create(self, job: JobSource, namespace: str | None = None) -> TFJob:
        """Create one TFJob from a YAML path (one TFJob document), a manifest dict or a model."""
        manifest = self._manifest(job, namespace)
        ns = manifest["metadata"]["namespace"]
        what = What("create", PLURAL, ns, manifest["metadata"].get("name", ""))
        created = self.conn.call(
            what,
            self.conn.custom.create_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            manifest,
        )
        return read_job(created)

    def _manifest(self, job: JobSource, namespace: str | None) -> dict[str, Any]:
        if isinstance(job, TFJob):
            model = job
        elif isinstance(job, dict):
            try:
                model = parse_tfjob(job)
            except TFJobValidationError as err:
                raise Invalid(str(err)) from None
        else:
            try:
                models = load_tfjobs(str(job), namespace)
            except InputError as err:
                raise Invalid(str(err)) from None
            if len(models) != 1:
                raise Invalid(
                    f"{job}: holds {len(models)} TFJobs; fix: one TFJob per file for create "
                    f"(or call create once per document)"
                )
            model = models[0]
        manifest = model.to_dict()
        manifest.pop("status", None)
        meta = manifest.setdefault("metadata", {})
        for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
            meta.pop(key, None)
        own = meta.get("namespace")
        if namespace and own and own != namespace and not isinstance(job, str | os.PathLike):
            raise Invalid(
                f'the TFJob names namespace "{own}" but namespace "{namespace}" was asked for; '
                f"fix: drop one of them"
            )
        meta["namespace"] = namespace or own or self.namespace
        return manifest

    def get(self, name: str, namespace: str | None = None) -> TFJob:
        """The TFJob (JobNotFound when there is none)."""
        ns = self._ns(namespace)
        obj = self.conn.call(
            What("get", PLURAL, ns, name),
            self.conn.custom.get_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            name,
        )
        return read_job(obj)

    def list(
        self, namespace: str | None = None, *, all_namespaces: bool = False
    ) -> builtins.list[TFJob]:
        """The TFJobs of a namespace (or of every namespace), by namespace and name."""
        items, _ = self._list(namespace, all_namespaces)
        return [read_job(item) for item in items]

    def _list(
        self, namespace: str | None, all_namespaces: bool
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        if all_namespaces:
            data = self.conn.call(
                What("list", PLURAL),
                self.conn.custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                PLURAL,
            )
        else:
            ns = self._ns(namespace)
            data = self.conn.call(
                What("list", PLURAL, ns),
                self.conn.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                ns,
                PLURAL,
            )
        items = sorted(
            data.get("items") or [],
            key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]),
        )
        return items, str((data.get("metadata") or {}).get("resourceVersion") or "")

    def delete(self, name: str, namespace: str | None = None) -> None:
        """Delete the TFJob (its pods and services go with it: owner references)."""
        ns = self._ns(namespace)
        self.conn.call(
            What("delete", PLURAL, ns, name),
            self.conn.custom.delete_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            name,
            body={"propagationPolicy": "Background"},
        )

    def suspend(self, name: str, namespace: str | None = None) -> TFJob:
        """Set spec.runPolicy.suspend: the operator deletes its pods; `resume` recreates them."""
        return self._suspend(name, namespace, True)

    def resume(self, name: str, namespace: str | None = None) -> TFJob:
        """Clear spec.runPolicy.suspend."""
        return self._suspend(name, namespace, False)

    def _suspend(self, name: str, namespace: str | None, value: bool) -> TFJob:
        ns = self._ns(namespace)
        obj = self.conn.call(
            What("patch", PLURAL, ns, name),
            self.conn.custom.patch_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            name,
            {"spec": {"runPolicy": {"suspend": value}}},
        )
        return read_job(obj)

    # -- state ----------------------------------------------------------------------------------
    def is_succeeded(self, name: str, namespace: str | None = None) -> bool:
        return self.get(name, namespace).status.is_true(COND_SUCCEEDED)

    def is_failed(self, name: str, namespace: str | None = None) -> bool:
        return self.get(name, namespace).status.is_true(COND_FAILED)

    def is_running(self, name: str, namespace: str | None = None) -> bool:
        return self.get(name, namespace).status.is_true(COND_RUNNING)

    def pods(self, name: str, namespace: str | None = None) -> builtins.list[ReplicaPod]:
        """The job's pods, in replica order (Chief, Evaluator, Master, PS, Worker; by index)."""
        ns = self._ns(namespace)
        data = self.conn.call(
            What("list", "pods", ns),
            self.conn.core.list_namespaced_pod,
            ns,
            label_selector=f"{LABEL_JOB_NAME}={name}",
            _preload_content=False,
        )
        items = _json(data).get("items") or []
        return sorted((ReplicaPod.from_pod(p) for p in items), key=lambda p: p.order)

    def events(self, name: str, namespace: str | None = None) -> builtins.list[JobEvent]:
        """Events recorded on the TFJob, oldest first."""
        ns = self._ns(namespace)
        data = self.conn.call(
            What("list", "events", ns),
            self.conn.core.list_namespaced_event,
            ns,
            field_selector=f"involvedObject.name={name},involvedObject.kind=TFJob",
            _preload_content=False,
        )
        events = [
            JobEvent(
                type=e.get("type") or "Normal",
                reason=e.get("reason") or "",
                message=e.get("message") or "",
                count=int(e.get("count") or 1),
                first_time=e.get("firstTimestamp") or e.get("eventTime"),
                last_time=e.get("lastTimestamp") or e.get("eventTime"),
                source=(e.get("source") or {}).get("component") or "",
                name=e["metadata"]["name"],
            )
            for e in _json(data).get("items") or []
        ]
        return sorted(events, key=lambda e: (e.first_time is None, e.first_time, e.name))

    # -- following ------------------------------------------------------------------------------
    def watch(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        name: str | None = None,
        timeout: float | None = None,
    ) -> Iterator[JobChange]:
        """The jobs there now (ADDED), then every change (ADDED, MODIFIED, DELETED) until
        `timeout` seconds have passed (None: until the caller stops). For a dashboard: one
        list and one watch, resumed by itself when the server expires it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        items, version = self._list(namespace, all_namespaces)
        seen: dict[tuple[str, str], TFJob] = {}
        for item in items:
            if name is None or item["metadata"]["name"] == name:
                job = read_job(item)
                seen[(job.namespace, job.name)] = job
                yield JobChange(type="ADDED", job=job)
        while deadline is None or time.monotonic() < deadline:
            left = None if deadline is None else deadline - time.monotonic()
            try:
                for event in self._watch(namespace, all_namespaces, name, version, left):
                    obj = event["object"]
                    version = str(obj["metadata"].get("resourceVersion") or version)
                    job = read_job(obj)
                    key = (job.namespace, job.name)
                    if event["type"] == "DELETED":
                        seen.pop(key, None)
                    else:
                        seen[key] = job
                    yield JobChange(type=event["type"], job=job)
            except Expired:  # list again; report what changed meanwhile
                items, version = self._list(namespace, all_namespaces)
                now = {
                    (j.namespace, j.name): j
                    for j in map(read_job, items)
                    if name is None or j.name == name
                }
                for key, job in now.items():
                    old = seen.get(key)
                    if (
                        old is None
                        or old.metadata.resource_version != job.metadata.resource_version
                    ):
                        yield JobChange(type="ADDED" if old is None else "MODIFIED", job=job)
                for key in set(seen) - set(now):
                    yield JobChange(type="DELETED", job=seen[key])
                seen = now

    def _watch(
        self,
        namespace: str | None,
        all_namespaces: bool,
        name: str | None,
        version: str,
        timeout: float | None,
    ) -> Iterator[dict[str, Any]]:
        selector = {"field_selector": f"metadata.name={name}"} if name else {}
        if all_namespaces:
            return self.conn.watch(
                What("watch", PLURAL),
                self.conn.custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                PLURAL,
                resource_version=version,
                timeout=timeout,
                **selector,
            )
        ns = self._ns(namespace)
        return self.conn.watch(
            What("watch", PLURAL, ns),
            self.conn.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            resource_version=version,
            timeout=timeout,
            **selector,
        )

    def wait(
        self,
        name: str,
        namespace: str | None = None,
        *,
        conditions: tuple[str, ...] = (COND_SUCCEEDED,),
        timeout: float | None = None,
        callback: Callback | None = None,
    ) -> TFJob:
        """Wait until one of `conditions` is True; return the job. `callback(job)` runs on the
        job as it is now and on every change. Raises JobFailed (the job's own message) when it
        fails and Failed is not among `conditions`, WaitTimeout after `timeout` seconds,
        JobNotFound when it does not exist or is deleted meanwhile."""
        started = time.monotonic()
        ns = self._ns(namespace)
        last = self.get(name, ns)  # JobNotFound now rather than an empty watch
        for change in self.watch(ns, name=name, timeout=timeout):
            if change.type == "DELETED":
                raise JobNotFound(f'TFJob "{name}" was deleted while waiting (namespace "{ns}")')
            last = change.job
            if callback is not None:
                callback(last)
            if any(last.status.is_true(c) for c in conditions):
                return last
            if last.status.is_true(COND_FAILED):
                raise JobFailed(last)
        raise WaitTimeout(last, time.monotonic() - started, conditions)

    def logs(
        self,
        name: str,
        namespace: str | None = None,
        *,
        replica: str | None = None,
        follow: bool = False,
        container: str = "tensorflow",
    ) -> Iterator[LogLine]:
        """Lines of the job's replicas' logs (`replica` "worker-1": that one only). Without
        `follow`: every started replica's log as it is now, one replica after the other. With
        `follow`: lines as they come, all replicas merged, waiting for pods to start (and for
        recreated ones), until the job has finished and every stream has ended."""
        ns = self._ns(namespace)
        self.get(name, ns)  # JobNotFound before anything else
        follower = LogFollower(self, ns, name, replica, container)
        if not follow:
            return follower.now()
        return follower.follow(lambda: self.get(name, ns).status.finished)


def _json(response: Any) -> dict[str, Any]:
    """The JSON body of a `_preload_content=False` response (plain dicts, camelCase)."""
    return dict(json.loads(response.data or b"{}"))
