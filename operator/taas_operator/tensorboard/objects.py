"""A TFJob's TensorBoard: where its chief writes summaries, and the objects that serve them.

    tensorboard_request(job) -> "run" | "link" | None   the annotation taas.dev/tensorboard
    tensorboard_link(job) -> str | None                   its http(s) URL, when it is one
    chief_model_dir(job) -> ModelDir                      the chief's model_dir, as the trainer
                                                          reads it (ModelDirError if unknowable)
    tensorboard_name(job_name) -> str                     <job>-tensorboard
    tensorboard_command(namespace, job_name) -> str       `taas tensorboard JOB -n NS`
    desired_tensorboard(job, image) -> (Deployment, Service) manifests; ModelDirError if the
                                                          chief's model_dir is on no volume
                                                          another pod can mount
    tensorboard_labels(job), owner_references(job)        what its objects carry

The annotation `taas.dev/tensorboard` either names a TensorBoard of the user's (an http(s)
URL: a link, as before) or is `"true"`: the operator runs one for the job. That TensorBoard
reads the chief's model_dir through the same volume (the chief's pod template's volume mounted
read-only at the same path), or a remote path (`gs://...`) directly; it is a Deployment and a
ClusterIP Service `<job>-tensorboard` owned by the TFJob (deleted with it), labelled without
the job-name label so that the job's own pod and service logic never counts them.

What it takes from the chief is what it needs, no more (the operator made it, so nothing the
tenant's template asks for beyond that should reach it): the model_dir's volume, mounted
read-only (a hostPath narrowed to the model_dir itself, and never `/`, a directory directly
under it or a system directory), and the chief's non-root user and groups, so that it may
read what the chief wrote.
Never the chief's host namespaces, root user, privileges, seccomp or SELinux or AppArmor
settings, sysctls, node placement, tolerations, pull secrets or ServiceAccount: its pod runs
as non-root with seccomp RuntimeDefault, without a ServiceAccount token, no capability and no
privilege escalation (Pod Security's "restricted" level, given a non-root image).

The model_dir is read as the trainer library reads it (`taas.core.settings`; a test keeps the
two lists of names equal): a flag of the chief container's command or args (`--model_dir`,
`--logdir`, `--train_dir`; `=value` or the next argument; `-` and `_` alike), else the env
`TAAS_MODEL_DIR`, `TF_LOGDIR`, `TF_MODEL_DIR` (first set wins), else `/tmp/taas-model`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from taas_operator.api.constants import (
    CONTROLLER_NAME,
    DEFAULT_CONTAINER_NAME,
    LABEL_JOB_UID,
    LABEL_OPERATOR_NAME,
    TENSORBOARD_ANNOTATION,
    TENSORBOARD_PORT,
)
from taas_operator.api.models import TFJob
from taas_operator.tfjob.rules import chief_slot

#: The TensorBoard pod's program: its own file's text, so that it needs no TaaS in the image.
_MAIN_SOURCE = Path(__file__).with_name("pod_program.py").read_text(encoding="utf-8")

#: Flags and env names the trainer reads model_dir from, in its order (`taas.core.settings`).
MODEL_DIR_FLAGS = ("model_dir", "logdir", "train_dir")
MODEL_DIR_ENV = ("TAAS_MODEL_DIR", "TF_LOGDIR", "TF_MODEL_DIR")
DEFAULT_MODEL_DIR = "/tmp/taas-model"
#: The label naming the job a TensorBoard serves (its Deployment, pod and Service).
LABEL_TENSORBOARD_FOR = "taas.dev/tensorboard-for"
_SUFFIX = "-tensorboard"
_MAX_NAME = 63  # a Service name is a DNS-1035 label
#: Volume kinds whose data no other pod can see.
_PRIVATE_VOLUMES = ("emptyDir", "ephemeral")


class ModelDirError(ValueError):
    """The chief's model_dir cannot be served: the message names the field and the fix."""


@dataclass(frozen=True)
class ModelDir:
    """The chief's model_dir and where it was read from (for messages)."""

    path: str
    source: str  # "env TF_LOGDIR", "flag --model_dir", "the trainer's default"
    replica: str  # "Chief", "Worker 0"
    container: dict[str, Any]
    pod_spec: dict[str, Any]

    @property
    def remote(self) -> bool:
        """A path TensorFlow's file systems read by URL (gs://, s3://, hdfs://...)."""
        return "://" in self.path


def tensorboard_request(job: TFJob) -> Literal["run", "link"] | None:
    """What the job's annotation asks for: "run" (the operator runs one), "link" (an http(s)
    URL of the user's), None (nothing, or a value that is neither)."""
    value = (job.metadata.annotations.get(TENSORBOARD_ANNOTATION) or "").strip()
    if value.lower() == "true":
        return "run"
    return "link" if tensorboard_link(value) else None


def tensorboard_link(value: str | None) -> str | None:
    """`value` when it is an http(s) URL with a host: any other scheme (javascript:, data:)
    would run in a page that shows it as a link."""
    parsed = urlparse((value or "").strip())
    return parsed.geturl() if parsed.scheme in ("http", "https") and parsed.netloc else None


def tensorboard_name(job_name: str) -> str:
    """The name of the Deployment and Service of a job's TensorBoard."""
    return job_name + _SUFFIX


def tensorboard_command(namespace: str, job_name: str) -> str:
    """The command that serves a cluster job's TensorBoard on this machine."""
    return f"taas tensorboard {job_name} -n {namespace}"


def _flag_value(args: list[str]) -> tuple[str, str] | None:
    """(value, flag) of the last model_dir flag before `--` (the last one wins, as argparse)."""
    found = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if not arg.startswith("--"):
            continue
        name, eq, value = arg[2:].partition("=")
        if name.replace("-", "_") not in MODEL_DIR_FLAGS:
            continue
        if eq:
            found = (value, f"--{name}")
        elif i + 1 < len(args):
            found = (args[i + 1], f"--{name}")
    return found


def _chief_container(job: TFJob) -> tuple[str, dict[str, Any], dict[str, Any]]:
    slot = chief_slot(job)
    if slot is None:
        raise ModelDirError(
            "the job has no chief (a Chief or Master replica, or Worker 0) to write summaries"
        )
    rtype, index = slot
    spec = job.spec.tf_replica_specs[rtype]
    pod_spec = (spec.template.get("spec") or {}) if isinstance(spec.template, dict) else {}
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
    chosen = [c for c in containers if c.get("name") == DEFAULT_CONTAINER_NAME] or containers[:1]
    if not chosen:
        raise ModelDirError(f"spec.tfReplicaSpecs.{rtype}.template has no container")
    label = rtype if rtype != "Worker" else f"Worker {index}"
    return label, chosen[0], pod_spec


def chief_model_dir(job: TFJob) -> ModelDir:
    """Where the chief writes checkpoints and summaries (see the module)."""
    replica, container, pod_spec = _chief_container(job)
    args = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    flagged = _flag_value(args)
    env = {
        str(e.get("name")): e
        for e in container.get("env") or []
        if isinstance(e, dict) and e.get("name")
    }
    if flagged:
        path, source = flagged[0], f"flag {flagged[1]}"
    else:
        named = next((name for name in MODEL_DIR_ENV if name in env), None)
        if named is None:
            path, source = DEFAULT_MODEL_DIR, "the trainer's default"
        elif "value" not in env[named]:
            raise ModelDirError(
                f"{replica}'s model_dir comes from env {named}'s valueFrom, which TaaS cannot "
                f"read: give {named} a value"
            )
        else:
            path, source = str(env[named]["value"]), f"env {named}"
    if "$(" in path:
        raise ModelDirError(
            f"{replica}'s model_dir ({source}: {path!r}) refers to a variable: give a path"
        )
    if not path:
        raise ModelDirError(f"{replica}'s model_dir ({source}) is empty: give a path")
    return ModelDir(path, source, replica, container, pod_spec)


def _mount_for(model_dir: ModelDir) -> tuple[dict[str, Any], dict[str, Any]]:
    """The chief's volume mount holding model_dir and its volume (the deepest mount wins)."""
    where = f"{model_dir.replica}'s model_dir {model_dir.path!r} ({model_dir.source})"
    if not posixpath.isabs(model_dir.path):
        raise ModelDirError(
            f"{where} is relative; TensorBoard's pod needs an absolute path on a volume"
        )
    path = posixpath.normpath(model_dir.path)
    mounts = [
        m
        for m in model_dir.container.get("volumeMounts") or []
        if isinstance(m, dict) and m.get("mountPath") and m.get("name")
    ]
    holding = [
        m
        for m in mounts
        if posixpath.commonpath([path, posixpath.normpath(str(m["mountPath"]))])
        == posixpath.normpath(str(m["mountPath"]))
    ]
    fix = (
        "mount a volume TensorBoard's pod can mount too there (a PersistentVolumeClaim, NFS, "
        "a hostPath on a one-node cluster), or write to a remote path (gs://, s3://)"
    )
    if not holding:
        raise ModelDirError(f"{where} is on no volume of the container, so only it can read it: "
                            + fix)  # fmt: skip
    mount = max(holding, key=lambda m: len(posixpath.normpath(str(m["mountPath"]))))
    volumes = {
        str(v.get("name")): v
        for v in model_dir.pod_spec.get("volumes") or []
        if isinstance(v, dict)
    }
    volume = volumes.get(str(mount["name"]))
    if volume is None:
        raise ModelDirError(f"{where}: the volume {mount['name']!r} is not in the template")
    private = [kind for kind in _PRIVATE_VOLUMES if kind in volume]
    if private:
        raise ModelDirError(
            f"{where} is on the {private[0]} volume {mount['name']!r}, which dies with the pod "
            f"and no other pod can read: {fix}"
        )
    return mount, volume


#: Node directories a TensorBoard never mounts, nor anything inside them (besides `/` and
#: any directory directly under it, which are refused too).
_SYSTEM_DIRS = (
    "/etc", "/proc", "/sys", "/dev", "/boot", "/root", "/run", "/var/run", "/usr", "/bin",
    "/sbin", "/lib", "/lib64", "/var/lib/kubelet", "/var/lib/etcd", "/var/lib/containerd",
    "/var/lib/docker", "/var/log",
)  # fmt: skip


def _narrowed(
    model_dir: ModelDir, mount: dict[str, Any], volume: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A hostPath volume narrowed to the model_dir itself: the TensorBoard mounts the node's
    directory holding the summaries, never the chief's wider hostPath (`/` mounted at
    `/host`); `/`, a directory directly under it, or a system directory is refused. Other
    volumes are returned as they are."""
    host = volume.get("hostPath")
    if not isinstance(host, dict):
        return mount, volume
    path = posixpath.normpath(model_dir.path)
    inside = posixpath.relpath(path, posixpath.normpath(str(mount["mountPath"])))
    parts = [str(host.get("path") or "/"), str(mount.get("subPath") or "")]
    narrowed = posixpath.normpath(posixpath.join(*parts, "" if inside == "." else inside))
    system = [d for d in _SYSTEM_DIRS if posixpath.commonpath([narrowed, d]) == d]
    if narrowed.count("/") < 2 or system:
        raise ModelDirError(
            f"{model_dir.replica}'s model_dir {model_dir.path!r} ({model_dir.source}) is the "
            f"node's directory {narrowed!r}, too wide a hostPath to hand to a TensorBoard (it "
            "would read the node's files); fix: write summaries to a directory of their own on "
            "the node, at least two levels deep and outside system directories, e.g. "
            "/srv/runs/<job>"
        )
    return (
        {"name": mount["name"], "mountPath": path},
        {"name": volume["name"], "hostPath": {"path": narrowed, "type": "Directory"}},
    )


def tensorboard_labels(job: TFJob) -> dict[str, str]:
    labels = {LABEL_OPERATOR_NAME: CONTROLLER_NAME, LABEL_TENSORBOARD_FOR: job.name}
    if job.metadata.uid:
        labels[LABEL_JOB_UID] = job.metadata.uid
    return labels


def owner_references(job: TFJob) -> list[dict[str, Any]]:
    if not job.metadata.uid:
        return []
    return [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": job.name,
            "uid": job.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


#: What the TensorBoard takes of the chief's pod securityContext: who it runs as, if not root.
_IDENTITY = ("runAsUser", "runAsGroup", "fsGroup")


def _security_context(chief: Any) -> dict[str, Any]:
    """Non-root, seccomp RuntimeDefault, with the chief's user and groups where they are
    not root's (to read what the chief wrote): nothing else of the chief's."""
    chief = chief if isinstance(chief, dict) else {}
    found: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    for key in _IDENTITY:
        value = chief.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found[key] = value
    groups = [g for g in chief.get("supplementalGroups") or [] if isinstance(g, int) and g > 0]
    if groups:
        found["supplementalGroups"] = groups
    return found


def desired_tensorboard(job: TFJob, image: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Deployment and Service of the job's TensorBoard; ModelDirError when it cannot read
    the chief's model_dir (the message names the field and the fix)."""
    name = tensorboard_name(job.name)
    if len(name) > _MAX_NAME:
        raise ModelDirError(
            f"the TensorBoard's name {name!r} is longer than {_MAX_NAME} characters: give the "
            f"TFJob a name of at most {_MAX_NAME - len(_SUFFIX)}"
        )
    model_dir = chief_model_dir(job)
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if not model_dir.remote:
        mount, volume = _narrowed(model_dir, *_mount_for(model_dir))
        mounts.append(
            {
                "name": mount["name"],
                "mountPath": mount["mountPath"],
                "readOnly": True,
                **({"subPath": mount["subPath"]} if mount.get("subPath") else {}),
            }
        )
        volumes.append(volume)
    labels = tensorboard_labels(job)

    def meta() -> dict[str, Any]:
        found: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": labels}
        if job.metadata.uid:
            found["ownerReferences"] = owner_references(job)
        return found

    container = {
        "name": "tensorboard",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        # TensorBoard's own main, with one header fixed (see pod_program's docstring).
        "command": ["python", "-c", _MAIN_SOURCE],
        "args": [
            f"--logdir={model_dir.path}",
            "--host=0.0.0.0",
            f"--port={TENSORBOARD_PORT}",
            "--reload_interval=5",
        ],
        "ports": [{"name": "http", "containerPort": TENSORBOARD_PORT, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/data/environment", "port": "http"},
            "periodSeconds": 2,
        },
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}},
    }
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "securityContext": _security_context(model_dir.pod_spec.get("securityContext")),
        "containers": [container],
        "volumes": volumes,
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(),
        "spec": {
            "selector": labels,
            "ports": [
                {
                    "name": "http",
                    "port": TENSORBOARD_PORT,
                    "targetPort": "http",
                    "protocol": "TCP",
                }
            ],
        },
    }
    return deployment, service
