"""Turn a TFJob manifest (a dict, as read from YAML or the API) into a validated `TFJob`.

    parse_tfjob(obj: Mapping[str, Any]) -> TFJob      # raises TFJobValidationError
    normalize_replica_type(key: str) -> ReplicaType | None

Rules are the ones the CRD enforces at `kubectl apply` (see `messages.py` for the shared text)
plus type checks. Every problem becomes a `FieldError(path, message)`; paths are written exactly
as kube-apiserver 1.34 writes them for the same rule, so `str(TFJobValidationError)` reads like
kubectl's output. (The apiserver itself is inconsistent: CEL rules name a replica as
`spec.tfReplicaSpecs[Worker]...`, schema checks such as enums, minimums and required fields as
`spec.tfReplicaSpecs.Worker...`; TaaS copies both.) Replica type keys are matched case-
insensitively and renamed to their canonical spelling (`worker` -> `Worker`) like Kubeflow does.
Defaults (replicas 1, restartPolicy Never, cleanPodPolicy Running, suspend false) come from the
models, so a manifest the apiserver never saw gets the same defaults the CRD schema writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from taas_operator.api import messages
from taas_operator.api.constants import (
    API_VERSION,
    CLEAN_POD_POLICIES,
    DEFAULT_CONTAINER_NAME,
    KIND,
    REPLICA_TYPES,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
    ReplicaType,
)
from taas_operator.api.models import TFJob

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_CANONICAL: dict[str, ReplicaType] = {t.lower(): t for t in REPLICA_TYPES}


class FieldError(BaseModel):
    """One problem: where (apiserver-style field path) and what (message with a fix)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class TFJobValidationError(ValueError):
    """A TFJob manifest broke one or more rules; `.errors` lists them all."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def normalize_replica_type(key: str) -> ReplicaType | None:
    """The canonical replica type for a key in any letter case, or None if unknown."""
    return _CANONICAL.get(key.lower())


def parse_tfjob(obj: Mapping[str, Any]) -> TFJob:
    """Validate a TFJob manifest and return the model, with keys normalised and defaults set."""
    if not isinstance(obj, Mapping):
        raise TFJobValidationError([FieldError(path="<root>", message="must be a mapping")])
    errors: list[FieldError] = []
    _check_kind(obj, errors)
    _check_name(obj.get("metadata"), errors)
    spec = obj.get("spec")
    normalized_specs: dict[str, Any] = {}
    if not isinstance(spec, Mapping):
        errors.append(FieldError(path="spec", message=messages.REQUIRED))
    else:
        normalized_specs = _check_replica_specs(spec.get("tfReplicaSpecs"), errors)
        _check_run_policy(spec, errors)
    if errors:
        raise TFJobValidationError(errors)
    data = dict(obj)
    data["spec"] = {**dict(spec or {}), "tfReplicaSpecs": normalized_specs}
    try:
        return TFJob.model_validate(data)
    except ValidationError as exc:
        raise TFJobValidationError(_from_pydantic(exc)) from None


def _check_kind(obj: Mapping[str, Any], errors: list[FieldError]) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version is not None and api_version != API_VERSION:
        errors.append(
            FieldError(
                path="apiVersion", message=messages.unsupported_value(api_version, (API_VERSION,))
            )
        )
    if kind is not None and kind != KIND:
        errors.append(FieldError(path="kind", message=messages.unsupported_value(kind, (KIND,))))


def _check_name(metadata: Any, errors: list[FieldError]) -> None:
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        errors.append(FieldError(path="metadata.name", message=messages.REQUIRED))
        return
    name = metadata["name"]
    if not isinstance(name, str) or len(name) > 63 or not _DNS1035.match(name):
        errors.append(FieldError(path="metadata.name", message=messages.NAME_DNS1035))


def _check_replica_specs(specs: Any, errors: list[FieldError]) -> dict[str, Any]:
    """Check keys and each replica; return the specs keyed by canonical type."""
    path = "spec.tfReplicaSpecs"
    if not isinstance(specs, Mapping):
        errors.append(FieldError(path=path, message=messages.REQUIRED))
        return {}
    if not specs:
        errors.append(FieldError(path=path, message=messages.NO_REPLICA_SPECS))
        return {}
    normalized: dict[str, Any] = {}
    for key, value in specs.items():
        canonical = normalize_replica_type(str(key))
        if canonical is None:
            errors.append(FieldError(path=path, message=messages.UNKNOWN_REPLICA_TYPE))
            continue
        if canonical in normalized:
            errors.append(FieldError(path=path, message=messages.DUPLICATE_REPLICA_TYPE))
            continue
        normalized[canonical] = value
        _check_replica(f"{path}[{key}]", f"{path}.{key}", value, errors)
    if "Chief" in normalized and "Master" in normalized:
        errors.append(FieldError(path=path, message=messages.CHIEF_AND_MASTER))
    return normalized


def _check_replica(path: str, schema_path: str, replica: Any, errors: list[FieldError]) -> None:
    """`path` is the CEL-style path of the replica, `schema_path` the schema-style one."""
    if not isinstance(replica, Mapping):
        errors.append(FieldError(path=schema_path, message="must be an object"))
        return
    replicas = replica.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
        errors.append(FieldError(path=f"{path}.replicas", message=messages.NEGATIVE_REPLICAS))
    policy = replica.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        errors.append(
            FieldError(
                path=f"{schema_path}.restartPolicy",
                message=messages.unsupported_value(policy, RESTART_POLICIES),
            )
        )
    template = replica.get("template")
    if not isinstance(template, Mapping):
        errors.append(FieldError(path=f"{schema_path}.template", message=messages.REQUIRED))
        return
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, Mapping):
        errors.append(FieldError(path=f"{schema_path}.template.spec", message=messages.REQUIRED))
        return
    _check_containers(f"{path}.template.spec.containers", pod_spec.get("containers"), errors)


def _check_containers(path: str, containers: Any, errors: list[FieldError]) -> None:
    if not isinstance(containers, list) or not containers:
        errors.append(FieldError(path=path, message=messages.NO_CONTAINERS))
        return
    for i, container in enumerate(containers):
        if not isinstance(container, Mapping):
            errors.append(FieldError(path=f"{path}[{i}]", message="must be an object"))
            continue
        if not container.get("image"):
            errors.append(FieldError(path=f"{path}[{i}].image", message=messages.NO_IMAGE))
    names = [c.get("name") for c in containers if isinstance(c, Mapping)]
    if DEFAULT_CONTAINER_NAME not in names:
        errors.append(FieldError(path=path, message=messages.NO_TENSORFLOW_CONTAINER))


def _check_run_policy(spec: Mapping[str, Any], errors: list[FieldError]) -> None:
    run_policy = spec.get("runPolicy")
    if isinstance(run_policy, Mapping):
        clean = run_policy.get("cleanPodPolicy")
        if clean is not None and clean not in CLEAN_POD_POLICIES:
            errors.append(
                FieldError(
                    path="spec.runPolicy.cleanPodPolicy",
                    message=messages.unsupported_value(clean, CLEAN_POD_POLICIES),
                )
            )
    success = spec.get("successPolicy")
    if success is not None and success not in SUCCESS_POLICIES:
        errors.append(
            FieldError(
                path="spec.successPolicy",
                message=messages.unsupported_value(success, SUCCESS_POLICIES),
            )
        )


def _from_pydantic(exc: ValidationError) -> list[FieldError]:
    """pydantic's errors, with apiserver-style paths and a hint to fix."""
    out = []
    for err in exc.errors():
        path = _format_loc(err["loc"])
        if err["type"] == "extra_forbidden":
            message = "unknown field; fix: remove it or check its spelling"
        elif err["type"] == "missing":
            message = messages.REQUIRED
        elif err["type"] == "greater_than_equal":
            bound = (err.get("ctx") or {}).get("ge")
            message = (
                f"Invalid value: {err.get('input')}: {path} in body should be greater than or "
                f"equal to {bound}"
            )
        else:
            message = f"Invalid value: {err.get('input')!r}: {err['msg']}"
        out.append(FieldError(path=path, message=message))
    return out


def _format_loc(loc: tuple[int | str, ...]) -> str:
    """Schema-style path: `spec.tfReplicaSpecs.Worker.replicas`, `...containers[0]`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
