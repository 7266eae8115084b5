"""TFJobClient: what Kubeflow's `TrainingClient` offers for TFJobs, typed, errors raised.

    client = TFJobClient(kubeconfig=None, context=None, namespace=None)
    client = TFJobClient.of(connection)   # on a client.kube.Connection (e.g. a viewer's token)
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
import time
from collections.abc import Callable, Iterator
from typing import Any

from taas_operator.api import TFJob
from taas_operator.api.constants import (
    COND_FAILED,
    COND_RUNNING,
    COND_SUCCEEDED,
    GROUP,
    LABEL_JOB_NAME,
    PLURAL,
    VERSION,
)
from taas_operator.api.names import InvalidName, check_name, check_namespace
from taas_operator.client.errors import Invalid, JobFailed, JobNotFound, WaitTimeout
from taas_operator.client.kube import Connection, What
from taas_operator.client.logs import LogFollower
from taas_operator.client.manifests import JobSource, job_manifest, read_job
from taas_operator.client.models import JobChange, JobEvent, LogLine, ReplicaPod
from taas_operator.client.watching import changes

Callback = Callable[[TFJob], None]


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

    @classmethod
    def of(cls, connection: Connection, namespace: str | None = None) -> TFJobClient:
        """A client on an existing connection (e.g. `Connection.with_token`'s)."""
        client = cls.__new__(cls)
        client.conn = connection
        client.namespace = namespace or connection.namespace
        return client

    def _ns(self, namespace: str | None) -> str:
        """The namespace to use, checked as a Kubernetes name (Invalid names the fix)."""
        return _checked(check_namespace, namespace or self.namespace, "namespace")

    # -- create, read, delete -------------------------------------------------------------------
    def create(self, job: JobSource, namespace: str | None = None) -> TFJob:
        """Create one TFJob from a YAML path (one TFJob document), a manifest dict or a model."""
        manifest = job_manifest(job, namespace, self.namespace)
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

    def get(self, name: str, namespace: str | None = None) -> TFJob:
        """The TFJob (JobNotFound when there is none)."""
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
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
        items, _ = self.list_objects(namespace, all_namespaces)
        return [read_job(item) for item in items]

    def list_objects(
        self, namespace: str | None, all_namespaces: bool
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """The stored TFJobs as plain dicts, and the list's resourceVersion (to watch from)."""
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
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
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
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
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
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
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
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
        data = self.conn.call(
            What("list", "events", ns),
            self.conn.core.list_namespaced_event,
            ns,
            field_selector=f"involvedObject.name={name},involvedObject.kind=TFJob",
            _preload_content=False,
        )
        items = sorted(  # creation order: whole-second stamps, then the etcd revision
            _json(data).get("items") or [],
            key=lambda e: (
                e.get("firstTimestamp") or e.get("eventTime") or "",
                int(e["metadata"].get("resourceVersion") or 0),
            ),
        )
        return [JobEvent.from_object(e) for e in items]

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
        `timeout` seconds have passed (None: until the caller stops); `name`: that job only.
        For a dashboard: one list and one watch, resumed by itself (`client.watching`)."""
        return changes(self, namespace, all_namespaces, name, timeout)

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
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
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
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
        self.get(name, ns)  # JobNotFound before anything else
        follower = LogFollower(self, ns, name, replica, container)
        if not follow:
            return follower.now()
        return follower.follow(lambda: self.get(name, ns).status.finished)


def _checked(check: Callable[[str, str], str], value: str, field: str) -> str:
    try:
        return check(value, field)
    except InvalidName as exc:
        raise Invalid(f"{exc}; fix: give the {field} as Kubernetes shows it") from None


def _json(response: Any) -> dict[str, Any]:
    """The JSON body of a `_preload_content=False` response (plain dicts, camelCase)."""
    return dict(json.loads(response.data or b"{}"))
