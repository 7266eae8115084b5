"""TFJobClient: what Kubeflow's `TrainingClient` offers for TFJobs, typed, errors raised.

    client = TFJobClient(kubeconfig=None, context=None, namespace=None)
    client = TFJobClient.of(connection)   # on an apiserver.blocking.Connection (a viewer's token)
    client.create(job) -> TFJob           # a YAML path, a manifest dict or a TFJob model
    client.create_job(train_file="train.py", num_workers=2, num_ps_replicas=1,
                      resources_per_worker={"gpu": 1}) -> TFJob   # your program, no image
    client.get(name) -> TFJob             client.list(all_namespaces=False) -> list[TFJob]
    client.wait(name, conditions=("Succeeded",), timeout=None, callback=None) -> TFJob
    client.logs(name, replica=None, follow=False) -> Iterator[LogLine]
    client.pods(name) -> list[ReplicaPod] client.events(name) -> list[JobEvent]
    client.delete(name)                   client.suspend(name) / client.resume(name) -> TFJob
    client.scale_job(name, workers) -> int   # the Worker replicas, through tfjobs/NAME/scale
    client.watch(namespace=None, all_namespaces=False, name=None, timeout=None)
        -> Iterator[JobChange]            # the jobs there now (ADDED), then every change
    client.is_succeeded(name) / is_failed(name) / is_running(name) -> bool

Every method takes `namespace=` (default: the client's, i.e. the kubeconfig context's).
Failures raise `taas_operator.apiserver.errors` exceptions whose text names the fix; `wait`
raises `JobFailed` with the job's own failure message when the job fails before reaching the
conditions asked for (Kubeflow's SDK hid it: kubeflow/training-operator#1180, #1183) and
`WaitTimeout` with the last state. `create` checks a YAML path or a dict with the same rules
`kubectl apply` and `taas validate` apply before sending anything.

`create_job` is Kubeflow SDK's `create_job(train_func=..., num_workers=...)` for a program file:
a TFJob whose replicas run `python /opt/taas/program/<file>` in the trainer image, the file in
a ConfigMap `<job>-program` made first, then owned by the TFJob (client.programs says why).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from taas_operator.api import TFJob
from taas_operator.api.constants import (
    COND_FAILED,
    COND_RUNNING,
    COND_SUCCEEDED,
    LABEL_JOB_NAME,
    PLURAL,
)
from taas_operator.api.names import InvalidName, check_name, check_namespace
from taas_operator.api.resources import CONFIG_MAP, EVENT, POD, TFJOB
from taas_operator.apiserver.blocking import Connection
from taas_operator.apiserver.errors import AlreadyExists, ApiError, Invalid, JobNotFound, Request
from taas_operator.client.errors import JobFailed, WaitTimeout
from taas_operator.client.logs import LogFollower
from taas_operator.client.manifests import JobSource, job_manifest, read_job
from taas_operator.client.models import JobChange, JobEvent, LogLine, ReplicaPod
from taas_operator.client.programoptions import CLI_NAMES, PYTHON_NAMES, python_options
from taas_operator.client.programs import (
    ProgramManifests,
    owned_config_map,
    program_job,
    read_program,
)
from taas_operator.client.scale import checked_workers, scale_workers
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
        self.conn = Connection.load(kubeconfig, context)
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
        what = Request("create", PLURAL, ns, manifest["metadata"].get("name", ""))
        return read_job(self.conn.call(what, "POST", TFJOB.path(ns), body=manifest))

    def create_job(
        self,
        train_file: str | os.PathLike[str],
        *,
        name: str | None = None,
        namespace: str | None = None,
        num_workers: int = 1,
        num_ps_replicas: int = 0,
        num_chief_replicas: int = 0,
        resources_per_worker: Mapping[str, Any] | None = None,
        base_image: str | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> TFJob:
        """Create a TFJob running the Python program `train_file` on every replica, shipped in
        a ConfigMap its pods mount at /opt/taas/program (owned by the TFJob: it goes with it).
        `name`: the TFJob's (default: the file's, `my_train.py` -> `my-train`);
        `resources_per_worker`: {"cpu": "2", "memory": "4Gi", "gpu": 1}, each replica's cpu and
        memory, the gpu (nvidia.com/gpu) of each worker and the chief; `base_image`: default
        the trainer image; `env`: the replicas' variables; `args`: the program's arguments.
        Every argument is checked before anything is sent (Invalid names it and the fix)."""
        options = python_options(
            name,
            num_workers,
            num_ps_replicas,
            num_chief_replicas,
            resources_per_worker,
            base_image,
            env,
            args,
        )
        program = read_program(train_file, PYTHON_NAMES)
        made = program_job(program, options, PYTHON_NAMES, self._ns(namespace))
        return self.create_program(made, PYTHON_NAMES)

    def create_program(self, made: ProgramManifests, names: Mapping[str, str] = CLI_NAMES) -> TFJob:
        """Create `made`'s ConfigMap first, then its TFJob, then make the ConfigMap owned by
        the TFJob (it goes with it). A ConfigMap of that name made by anyone else is refused
        before any TFJob exists: the pods would mount whatever it holds. When the TFJob cannot
        be created, the ConfigMap is deleted again (by uid)."""
        ns, name = made.job.namespace, made.config_map["metadata"]["name"]
        body = {**made.config_map, "metadata": {**made.config_map["metadata"], "namespace": ns}}
        try:
            stored = self.conn.call(
                Request("create", "configmaps", ns, name), "POST", CONFIG_MAP.path(ns), body=body
            )
        except AlreadyExists as err:
            if self._exists(ns, made.job.name):  # submitted before: the TFJob is the news
                raise AlreadyExists(
                    f'TFJob "{made.job.name}" already exists in namespace "{ns}"; fix: delete '
                    f"it first (taas delete {made.job.name}) or give the new one another "
                    f"{names['name']}"
                ) from None
            raise AlreadyExists(
                f"configmaps {name!r} already exists and taas submit did not make it: the "
                f"TFJob's pods would run whatever it holds; fix: delete it if it is yours "
                f"(kubectl delete configmap {name} -n {ns}), or give the job another "
                f"{names['name']}",
                err.status,
                err.request,
                err.server_message,
            ) from None
        uid = str(stored["metadata"]["uid"])
        try:
            job = self.create(made.tfjob)
        except ApiError as err:
            self._delete_config_map(ns, name, uid)
            if isinstance(err, AlreadyExists):
                raise AlreadyExists(
                    f"{str(err).split('; fix:')[0]}; fix: delete it first (taas delete "
                    f"{made.job.name}) or give the new one another {names['name']}"
                ) from None
            raise
        owners = owned_config_map(made.config_map, job)["metadata"]["ownerReferences"]
        try:
            self.conn.call(
                Request("patch", "configmaps", ns, name),
                "PATCH",
                CONFIG_MAP.path(ns, name),
                body={"metadata": {"uid": uid, "ownerReferences": owners}},
                content_type="application/merge-patch+json",
            )
        except ApiError as err:
            raise type(err)(
                f"the ConfigMap {name} holding the program: {err} (the TFJob {job.name} runs; "
                f"delete the ConfigMap after it: kubectl delete configmap {name} -n {ns})",
                err.status,
                err.request,
                err.server_message,
            ) from None
        return job

    def _exists(self, namespace: str, name: str) -> bool:
        try:
            self.get(name, namespace)
        except JobNotFound:
            return False
        return True

    def _delete_config_map(self, namespace: str, name: str, uid: str) -> None:
        """Delete the ConfigMap this call made (that one only: its uid), if it can."""
        with contextlib.suppress(ApiError):
            self.conn.call(
                Request("delete", "configmaps", namespace, name),
                "DELETE",
                CONFIG_MAP.path(namespace, name),
                body={"preconditions": {"uid": uid}},
            )

    def get(self, name: str, namespace: str | None = None) -> TFJob:
        """The TFJob (JobNotFound when there is none)."""
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
        obj = self.conn.call(Request("get", PLURAL, ns, name), "GET", TFJOB.path(ns, name))
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
        ns = "" if all_namespaces else self._ns(namespace)
        data = self.conn.call(Request("list", PLURAL, ns), "GET", TFJOB.path(ns))
        items = sorted(
            data.get("items") or [],
            key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]),
        )
        return items, str((data.get("metadata") or {}).get("resourceVersion") or "")

    def delete(self, name: str, namespace: str | None = None) -> None:
        """Delete the TFJob (its pods and services go with it: owner references)."""
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
        self.conn.call(
            Request("delete", PLURAL, ns, name),
            "DELETE",
            TFJOB.path(ns, name),
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
            Request("patch", PLURAL, ns, name),
            "PATCH",
            TFJOB.path(ns, name),
            body={"spec": {"runPolicy": {"suspend": value}}},
            content_type="application/merge-patch+json",
        )
        return read_job(obj)

    def scale_job(self, name: str, workers: int, namespace: str | None = None) -> int:
        """Set the Worker replicas through the scale subresource, as `kubectl scale` does;
        the count the apiserver stored (`client.scale`)."""
        workers = checked_workers(workers)
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
        return scale_workers(self.conn, ns, name, workers)

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
            Request("list", "pods", ns),
            "GET",
            POD.path(ns),
            query={"labelSelector": f"{LABEL_JOB_NAME}={name}"},
        )
        items = data.get("items") or []
        return sorted((ReplicaPod.from_pod(p) for p in items), key=lambda p: p.order)

    def events(self, name: str, namespace: str | None = None) -> builtins.list[JobEvent]:
        """Events recorded on the TFJob, oldest first."""
        ns, name = self._ns(namespace), _checked(check_name, name, "name")
        data = self.conn.call(
            Request("list", "events", ns),
            "GET",
            EVENT.path(ns),
            query={"fieldSelector": f"involvedObject.name={name},involvedObject.kind=TFJob"},
        )
        items = sorted(  # creation order: whole-second stamps, then the etcd revision
            data.get("items") or [],
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
