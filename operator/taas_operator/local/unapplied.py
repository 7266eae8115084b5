"""Which parts of a job's pod templates `taas run` does not apply, said in one line per job.

    unapplied(job, uid=os.geteuid(), capabilities=effective_capabilities()) -> str | None

`taas run` applies, of each replica's template: the `tensorflow` container's command, args,
env (values and the downward-API fields `local.container` can fill), workingDir and the
port `tfjob-port` (a free port on 127.0.0.1 instead of its number), the pod's restartPolicy
(from the replica spec) and terminationGracePeriodSeconds, and the template's labels and
annotations (for fieldRefs). The image is not pulled (the runner says so once).

Said (not applied, and it can change what the program does or may do): other containers and
initContainers (not run), volumes and volumeMounts (paths are this machine's), resources
(nothing is limited; requests only decide whether the run fits, see `local.capacity`; a GPU limit
leaves every GPU visible), probes and lifecycle hooks, host namespaces, runtimeClassName,
hostAliases, and every securityContext field that is not already true of the local process
(runAsNonRoot as a non-root user, runAsUser/runAsGroup equal to ours, privileged: false,
capabilities that drop ALL while we hold none).

Not said (no meaning on one machine, and skipping them grants nothing): scheduling
(nodeSelector, affinity, tolerations, priority, schedulerName...), the service account and its
token, imagePullPolicy/imagePullSecrets, DNS settings, readiness, termination messages, tty.
envFrom and unresolvable env sources are noted by `local.container`, per pod.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from taas_operator.api import TFJob
from taas_operator.api.constants import DEFAULT_CONTAINER_NAME

_POD_APPLIED = {"containers", "restartPolicy", "terminationGracePeriodSeconds"}
_POD_SILENT = {
    "affinity",
    "automountServiceAccountToken",
    "dnsConfig",
    "dnsPolicy",
    "enableServiceLinks",
    "hostname",
    "imagePullSecrets",
    "nodeName",
    "nodeSelector",
    "os",
    "overhead",
    "preemptionPolicy",
    "priority",
    "priorityClassName",
    "readinessGates",
    "schedulerName",
    "schedulingGates",
    "serviceAccount",
    "serviceAccountName",
    "setHostnameAsFQDN",
    "subdomain",
    "tolerations",
    "topologySpreadConstraints",
}
_CONTAINER_APPLIED = {"name", "image", "command", "args", "env", "envFrom", "workingDir", "ports"}
_CONTAINER_SILENT = {
    "imagePullPolicy",
    "readinessProbe",
    "stdin",
    "stdinOnce",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "tty",
}
_HINTS = {
    "initContainers": "initContainers (not run)",
    "volumes": "volumes",
    "volumeMounts": "volumeMounts (paths are this machine's)",
}


def effective_capabilities() -> int:
    """This process's effective capability set (CapEff), 0 where it cannot be read."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def _security(context: Any, uid: int, capabilities: int) -> list[str]:
    """securityContext fields not already true of a process with `uid` and `capabilities`."""
    if not isinstance(context, dict):
        return []
    true_here = {
        "runAsNonRoot": context.get("runAsNonRoot") is True and uid != 0,
        "runAsUser": context.get("runAsUser") == uid,
        "runAsGroup": context.get("runAsGroup") == os.getegid(),
        "privileged": context.get("privileged") is False,
        "capabilities": (
            "ALL" in ((context.get("capabilities") or {}).get("drop") or [])
            and not (context.get("capabilities") or {}).get("add")
            and capabilities == 0
        ),
    }
    return [f"securityContext.{key}" for key in context if not true_here.get(key, False)]


def _resources(container: dict[str, Any]) -> list[str]:
    resources = container.get("resources") or {}
    if not isinstance(resources, dict) or not any(resources.values()):
        return []
    gpus = sorted(
        {
            name
            for kind in ("limits", "requests")
            for name in (resources.get(kind) or {})
            if name.endswith("/gpu")
        }
    )
    said = ["resources (not enforced)"]
    if gpus:
        said.append(f"{', '.join(gpus)} (every GPU of this machine is visible)")
    return said


def _container_parts(container: dict[str, Any], uid: int, capabilities: int) -> list[str]:
    parts: list[str] = []
    for key in container:
        if key in _CONTAINER_APPLIED or key in _CONTAINER_SILENT:
            continue
        if key == "resources":
            parts += _resources(container)
        elif key == "securityContext":
            parts += _security(container[key], uid, capabilities)
        else:
            parts.append(_HINTS.get(key, key))
    return parts


def _template_parts(template: dict[str, Any], uid: int, capabilities: int) -> list[str]:
    spec = template.get("spec") or {}
    parts: list[str] = []
    for key, value in spec.items():
        if key in _POD_APPLIED or key in _POD_SILENT or value in (None, [], {}):
            continue
        if key == "securityContext":
            parts += _security(value, uid, capabilities)
        else:
            parts.append(_HINTS.get(key, key))
    for container in spec.get("containers") or []:
        if container.get("name") == DEFAULT_CONTAINER_NAME:
            parts += _container_parts(container, uid, capabilities)
        else:
            parts.append(f"container {container.get('name')} (not run)")
    return _unique(parts)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def unapplied(job: TFJob, uid: int | None = None, capabilities: int | None = None) -> str | None:
    """One line naming, per replica type, what `taas run` will not apply; None when nothing."""
    uid = os.geteuid() if uid is None else uid
    capabilities = effective_capabilities() if capabilities is None else capabilities
    types_by_parts: dict[str, list[str]] = {}  # replica types with the same list share it
    for rtype in job.replica_types():
        spec = job.spec.tf_replica_specs[rtype]
        parts = _template_parts(spec.template, uid, capabilities) if spec.replicas else []
        if parts:
            types_by_parts.setdefault(", ".join(parts), []).append(rtype)
    if not types_by_parts:
        return None
    said = "; ".join(f"{', '.join(types)}: {parts}" for parts, types in types_by_parts.items())
    return f"TFJob {job.name}: not applied on this machine: {said}"
