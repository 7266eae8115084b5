"""The operator on a real apiserver, for the operator and dashboard tests: a small JSON client
(`Api`), the operator as a subprocess, a TFJob's conditions (waiting: tests.harness.waiting).

What is real: kube-apiserver + etcd (the session fixture), the operator process (`taas
operator`, kopf, the whole controller), RBAC. What is not there: a kubelet. Pods therefore never
run by themselves; tests play the kubelet's part by writing pod status through the pods/status
subresource (`Api.set_pod_phase`), which is what the operator watches.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from taas_operator.processes import spawn, stop
from tests.harness.waiting import wait

T = TypeVar("T")

TFJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs"
PODS = "/api/v1/namespaces/{ns}/pods"
SERVICES = "/api/v1/namespaces/{ns}/services"
POLICIES = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
EVENTS = "/api/v1/namespaces/{ns}/events"
JOB_LABEL = "training.kubeflow.org/job-name"
OPERATOR_CMD = ["taas", "operator"]


class ApiStatusError(RuntimeError):
    """A non-2xx answer from the apiserver."""

    def __init__(self, code: int, body: str) -> None:
        self.code = code
        super().__init__(f"HTTP {code}: {body[:500]}")


class Api:
    """Blocking JSON calls as the identity of a kubeconfig (client certificate)."""

    def __init__(self, kubeconfig: str) -> None:
        config = yaml.safe_load(Path(kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        self.server = cluster["server"]
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self.context.load_cert_chain(user["client-certificate"], user["client-key"])

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.server + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            raise ApiStatusError(err.code, err.read().decode(errors="replace")) from None
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def find(self, path: str) -> dict[str, Any] | None:
        """GET, or None on 404."""
        try:
            return dict(self.get(path))
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.call("POST", path, body))

    def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        return dict(self.call("PATCH", path, patch, "application/merge-patch+json"))

    def delete(self, path: str) -> None:
        with contextlib.suppress(ApiStatusError):
            self.call("DELETE", path)

    # -- TFJob test vocabulary ------------------------------------------------------------------
    def create_tfjob(self, ns: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return self.create(TFJOBS.format(ns=ns), manifest)

    def tfjob(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.find(f"{TFJOBS.format(ns=ns)}/{name}")

    def patch_tfjob(self, ns: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.merge_patch(f"{TFJOBS.format(ns=ns)}/{name}", patch)

    def pods(self, ns: str, job: str) -> dict[str, dict[str, Any]]:
        """Pods of a job by name (the job-name label)."""
        items = self.get(f"{PODS.format(ns=ns)}?labelSelector={JOB_LABEL}={job}")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def services(self, ns: str, job: str) -> dict[str, dict[str, Any]]:
        items = self.get(f"{SERVICES.format(ns=ns)}?labelSelector={JOB_LABEL}={job}")["items"]
        return {s["metadata"]["name"]: s for s in items}

    def policies(self, ns: str, job: str) -> dict[str, dict[str, Any]]:
        items = self.get(f"{POLICIES.format(ns=ns)}?labelSelector={JOB_LABEL}={job}")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def events(self, ns: str, job: str) -> list[dict[str, Any]]:
        """Events recorded on the TFJob, oldest first."""
        query = f"fieldSelector=involvedObject.name={job},involvedObject.kind=TFJob"
        items = self.get(f"{EVENTS.format(ns=ns)}?{query}")["items"]
        return sorted(items, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))

    def set_pod_phase(
        self,
        ns: str,
        name: str,
        phase: str,
        exit_code: int | None = None,
        reason: str | None = None,
        restart_count: int = 0,
        pod_ip: str | None = None,
    ) -> dict[str, Any]:
        """Play the kubelet: write the pod's phase and its tensorflow container's state (and
        its IP, where the operator reads a chief's training progress). `reason`: a terminated
        container's, or a Pending one's waiting reason (e.g. `ImagePullBackOff`)."""
        if phase == "Running":
            state: dict[str, Any] = {"running": {"startedAt": _now()}}
        elif phase in ("Succeeded", "Failed"):
            code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
            terminated = {"exitCode": code, "startedAt": _now(), "finishedAt": _now()}
            terminated["reason"] = reason or ("Completed" if code == 0 else "Error")
            state = {"terminated": terminated}
        else:
            state = {"waiting": {"reason": reason or "ContainerCreating"}}
        status: dict[str, Any] = {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": "tensorflow",
                    "image": "example.com/trainer:1",
                    "imageID": "",
                    "ready": phase == "Running",
                    "restartCount": restart_count,
                    "state": state,
                }
            ],
        }
        if pod_ip:
            status["podIP"] = pod_ip
        return self.merge_patch(f"{PODS.format(ns=ns)}/{name}/status", {"status": status})


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def condition(job: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """The TFJob condition of this type when it is True."""
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_ and cond["status"] == "True":
            return dict(cond)
    return None


def unchanged(api: Api, path: str, before: dict[str, Any]) -> None:
    """The object at `path` is still `before`: the same uid, never written since."""
    after = api.get(path)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def named_in_event(message: str, verb: str = "Created", noun: str = "pod") -> list[str]:
    """The names of the objects of one kind an event says a pass created (or deleted: `verb`
    "Deleted"): its parts "Created pod: a" or "Created 3 pods: a, b, c" (a long list ends with
    "(and N more)"; those are not returned). A pass's event joins its parts with ". " after
    the lifecycle message: "TFJob x is created. Created 3 pods: ... Created policy: x"."""
    names: list[str] = []
    for part in message.split(". "):
        match = re.match(rf"^{verb} (?:\d+ )?(\w+): (.*)$", part.rstrip("."))
        if match and match[1] in (noun, noun + "s", noun[:-1] + "ies"):
            names += re.sub(r" \(and \d+ more\)$", "", match[2]).split(", ")
    return names


def named_in_events(
    events: list[dict[str, Any]], verb: str = "Created", noun: str = "pod"
) -> list[str]:
    """`named_in_event` over every event of the job (one name per mention)."""
    return [name for e in events for name in named_in_event(e["message"], verb, noun)]


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    """Plain env of the pod's tensorflow container."""
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def tfjob(name: str, replicas: dict[str, dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A TFJob manifest; `replicas` maps type -> {"replicas": n, "restartPolicy": p, ...}."""
    specs = {}
    for rtype, extra in replicas.items():
        extra = dict(extra)
        containers = extra.pop(
            "containers", [{"name": "tensorflow", "image": "example.com/trainer:1"}]
        )
        specs[rtype] = {**extra, "template": {"spec": {"containers": containers}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": specs, **spec},
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


class OperatorProcess:
    """`taas operator ...` in its own process group, its output in a log file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.args, self.log_path, self.env = args, log, env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(self.env or {})}
        with self.log_path.open("ab") as log:
            self.proc = spawn([*OPERATOR_CMD, *self.args], env=env, stdout=log)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the process group and wait for it (SIGKILL: no clean shutdown at all)."""
        if self.proc is not None:
            stop(self.proc, sig, grace=15)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)


def python_operator_cmd() -> list[str]:
    """The `python -m` form of the operator command (same code as the console script)."""
    return [sys.executable, "-m", "taas_operator.controller"]


StartOperator = Callable[..., OperatorProcess]


def new_namespace(api: Api, prefix: str = "op") -> str:
    """A fresh namespace (never deleted: no namespace controller would finish the job)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    return name


def launch_operator(
    args: list[str], log: Path, env: dict[str, str] | None = None
) -> OperatorProcess:
    """Start `taas operator ARGS` and wait until kopf has logged in (or the process died)."""
    proc = OperatorProcess(args, log, env).start()
    wait(
        lambda: "Initial authentication has finished" in proc.log() or not proc.alive(),
        "the operator to log in",
    )
    assert proc.alive(), f"operator exited:\n{proc.log()[-3000:]}"
    return proc
