"""What a kubelet would run for a pod's `tensorflow` container, turned into a local process spec.

    launch_spec(pod: Mapping, base: Mapping[str, str] | None = None) -> Launch

- env: the container's `env` in order; each `value` is `$(VAR)`-expanded against the entries
  before it (kubelet rules); downward-API `fieldRef`s that make sense on one machine are
  filled in (metadata.name, metadata.namespace, metadata.labels['k'], metadata.annotations['k'],
  status.podIP and status.hostIP as 127.0.0.1); other sources (secrets, config maps,
  resourceFieldRef, envFrom) cannot be read here and are left unset with a one-line note.
  Under it lies `base_env`: by default only what is needed to find Python and run here (PATH,
  HOME, LANG, ...; `local.environment`), never the runner's credentials; the container env
  overrides it; `$(VAR)` sees only the container env, as in Kubernetes.
- command + args, `$(VAR)`-expanded against the container env. `command` is required: the
  image's entrypoint is unknown here.
- `python`/`python3` as the command run the current interpreter, and its directory is put
  first on PATH (for programs the command starts).
- workingDir, else the current directory. `image` is not pulled (a note says so).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from taas_operator.api.constants import DEFAULT_CONTAINER_NAME
from taas_operator.documents import InputError
from taas_operator.local.environment import EnvPolicy, base_env
from taas_operator.local.expansion import expand
from taas_operator.processes import LOCAL_IP


class Launch(BaseModel):
    """A process to start for one pod: argv, full environment, working directory, notes."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    notes: list[str] = Field(default_factory=list)


def _container(pod: Mapping[str, Any]) -> dict[str, Any]:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == DEFAULT_CONTAINER_NAME:
            return dict(container)
    raise InputError(f"pod {pod['metadata']['name']}: no container named {DEFAULT_CONTAINER_NAME}")


def _field_ref(pod: Mapping[str, Any], path: str) -> str | None:
    meta = pod.get("metadata") or {}
    if path == "metadata.name":
        return str(meta.get("name", ""))
    if path == "metadata.namespace":
        return str(meta.get("namespace", "default"))
    if path in ("status.podIP", "status.hostIP"):
        return LOCAL_IP
    for key in ("labels", "annotations"):
        prefix = f"metadata.{key}['"
        if path.startswith(prefix) and path.endswith("']"):
            return str((meta.get(key) or {}).get(path[len(prefix) : -2], ""))
    return None


def _container_env(
    pod: Mapping[str, Any], container: Mapping[str, Any], where: str, notes: list[str]
) -> dict[str, str]:
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        name = str(entry.get("name", ""))
        if "valueFrom" not in entry:
            value = str(entry.get("value") or "")
            env[name] = expand(value, env) if value else value
            continue
        source = entry.get("valueFrom") or {}
        field = (source.get("fieldRef") or {}).get("fieldPath")
        found = _field_ref(pod, field) if field else None
        if found is not None:
            env[name] = found
        else:
            what = f"fieldRef {field}" if field else f"{', '.join(source) or 'valueFrom'}"
            notes.append(f"{where}: env {name} ({what}) cannot be resolved locally; left unset")
    if container.get("envFrom"):
        notes.append(f"{where}: envFrom cannot be read locally; ignored")
    return env


def _local_path(env: dict[str, str]) -> str:
    """PATH with the current interpreter's directory first, so `python` is this Python."""
    here = str(Path(sys.executable).parent)
    rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *rest])


def launch_spec(pod: Mapping[str, Any], base: Mapping[str, str] | None = None) -> Launch:
    """The local process for a pod manifest built by the planner; InputError if it cannot run.
    `base`: the environment under the container's (default: `base_env(EnvPolicy())`)."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    container = _container(pod)
    where = f"pod {name}, container {DEFAULT_CONTAINER_NAME}"
    notes: list[str] = []
    cenv = _container_env(pod, container, where, notes)
    command = [expand(str(a), cenv) for a in container.get("command") or []]
    args = [expand(str(a), cenv) for a in container.get("args") or []]
    if not command:
        raise InputError(
            f"{where}: command is not set; taas run cannot read the entrypoint of image "
            f'{container.get("image")!r} locally. Fix: set command (e.g. ["python", '
            f'"train.py"]) in the container'
        )
    env = {**(base if base is not None else base_env(EnvPolicy())), **cenv}
    env["PATH"] = _local_path({"PATH": cenv.get("PATH") or env.get("PATH", os.defpath)})
    env.setdefault("PYTHONUNBUFFERED", "1")
    working_dir = container.get("workingDir")
    if working_dir and not Path(working_dir).is_dir():
        raise InputError(
            f"{where}: workingDir {working_dir!r} does not exist on this machine. Fix: create "
            f"it, or remove workingDir to run in the current directory"
        )
    argv = command + args
    if re.fullmatch(r"python(3(\.\d+)?)?", argv[0]):
        argv[0] = sys.executable
    if shutil.which(argv[0], path=env["PATH"]) is None and not (
        os.sep in argv[0] and Path(working_dir or ".", argv[0]).exists()
    ):
        raise InputError(
            f"{where}: command {argv[0]!r} not found on PATH. Fix: install it or use a "
            f"command available here"
        )
    return Launch(argv=argv, env=env, cwd=str(working_dir or os.getcwd()), notes=notes)
