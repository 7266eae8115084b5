"""Turn a TFJob manifest (a dict, as read from YAML or the API) into a validated `TFJob`.

    parse_tfjob(obj: Mapping[str, Any]) -> TFJob      # raises TFJobValidationError
    template_errors(replica_type: str, template: Any) -> list[FieldError]
    normalize_replica_type(key: str) -> ReplicaType | None

`parse_tfjob` answers what `kubectl apply` of the manifest to a cluster with the TaaS CRD would
answer, in the order the apiserver works: kubectl's own checks (apiVersion, kind, name); unknown
fields, which kubectl's default strict validation refuses, nulls dropped and defaults applied
(`pruning.py`); the CRD's schema, generated with the pod template's real schema (`schema.py`,
checked by `structural.py`); its list-type rules (`listtypes.py`); and its CEL rules,
implemented here with the same messages (`messages.py`) and, like the apiserver, skipped when
a schema error of the blocking kinds (type, required, enum, too long, too many) was found. The
one deliberate difference: the name check runs always (kubectl would first print the
apiserver's own name message for names that are not even DNS subdomains).

Every problem becomes a `FieldError(path, message)`; paths are written exactly as
kube-apiserver 1.34 writes them for the same rule, so `str(TFJobValidationError)` reads like
kubectl's output. (The apiserver itself is inconsistent: CEL and list-type rules name a replica
as `spec.tfReplicaSpecs[Worker]...`, schema checks as `spec.tfReplicaSpecs.Worker...`; TaaS
copies both.) Replica type keys are matched case-insensitively and renamed to their canonical
spelling (`worker` -> `Worker`) like Kubeflow does. Defaults (replicas 1, restartPolicy Never,
cleanPodPolicy Running, suspend false) come from the models, so a manifest the apiserver never
saw gets the same defaults the CRD schema writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from taas_operator.api import messages
from taas_operator.api.constants import (
    API_VERSION,
    DEFAULT_CONTAINER_NAME,
    KIND,
    MAX_REPLICAS,
    REPLICA_TYPES,
    ReplicaType,
)
from taas_operator.api.errors import FieldError, TFJobValidationError
from taas_operator.api.listtypes import list_type_errors
from taas_operator.api.models import TFJob
from taas_operator.api.pruning import Path, UnknownField, bracketed, prepare
from taas_operator.api.schema import template_schema, tfjob_schema
from taas_operator.api.structural import TYPE_WORDS, schema_errors

__all__ = [
    "FieldError",
    "TFJobValidationError",
    "normalize_replica_type",
    "parse_tfjob",
    "template_errors",
]

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_CANONICAL: dict[str, ReplicaType] = {t.lower(): t for t in REPLICA_TYPES}
_MAX_LABEL = 63
_NOT_BY_SCHEMA = frozenset({"apiVersion", "kind", "metadata", "status"})


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
    schema = tfjob_schema()
    prepared = prepare(obj, schema)
    errors += [_unknown_field(field) for field in prepared.unknown]
    # The apiserver drops the status of a new object before it validates; apiVersion, kind and
    # metadata are checked above, as kubectl and the apiserver check them (not by the schema).
    body = {k: v for k, v in prepared.defaulted.items() if k not in _NOT_BY_SCHEMA}
    found = schema_errors(body, schema) + list_type_errors(body, schema)
    errors += found + scale_errors(body)
    if any(e.blocking for e in found):
        errors.append(FieldError(path="<nil>", message=messages.RULES_NOT_CHECKED))
    else:
        _check_rules(body, obj.get("metadata"), errors)
    if errors:
        raise TFJobValidationError(errors)
    data = dict(prepared.pruned)
    specs = data["spec"]["tfReplicaSpecs"]
    data["spec"] = {
        **data["spec"],
        "tfReplicaSpecs": {normalize_replica_type(k): v for k, v in specs.items()},
    }
    try:
        return TFJob.model_validate(data)
    except ValidationError as exc:
        raise TFJobValidationError(_from_pydantic(exc)) from None


#: The scale subresource's specReplicasPath, as the apiserver names it in its errors.
SCALE_PATH = ".spec.tfReplicaSpecs.Worker.replicas"


def scale_errors(body: Mapping[str, Any]) -> list[FieldError]:
    """The apiserver's own check of the scale subresource's replicas field (Worker.replicas),
    made beside the schema's, and shown even when a schema error skips the CEL rules: a whole
    number (an int64) and not negative."""
    specs = (body.get("spec") or {}).get("tfReplicaSpecs") if isinstance(body, Mapping) else None
    worker = specs.get("Worker") if isinstance(specs, Mapping) else None
    if not isinstance(worker, Mapping) or worker.get("replicas") is None:
        return []
    value = worker["replicas"]
    if isinstance(value, bool) or not isinstance(value, int):
        said = f"Invalid value: 0: {SCALE_PATH} accessor error"
        if isinstance(value, str):  # Go's %v of a string is the string itself
            said += f": {value} is of the type string, expected int64"
        return [FieldError(path=SCALE_PATH, message=said)]
    if value < 0:
        return [
            FieldError(
                path=SCALE_PATH, message=f"Invalid value: {value}: should be a non-negative integer"
            )
        ]
    return []


def template_errors(replica_type: str, template: Any) -> list[FieldError]:
    """Schema and list-type errors of one replica's pod template (unknown fields ignored, as the
    apiserver prunes them): what the pod builder needs to hold before it can read a template.

    the planner asks on every pass and templates rarely change, so answers are remembered by
    the template's JSON text."""
    try:
        text = json.dumps(template, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON (e.g. keys of mixed types): no memo
        return list(_template_errors(replica_type, template))
    return list(_remembered_template_errors(replica_type, text))


@lru_cache(maxsize=512)
def _remembered_template_errors(replica_type: str, text: str) -> tuple[FieldError, ...]:
    return _template_errors(replica_type, json.loads(text))


def _template_errors(replica_type: str, template: Any) -> tuple[FieldError, ...]:
    path: Path = (("field", "spec"), ("field", "tfReplicaSpecs"), ("key", replica_type))
    path = (*path, ("field", "template"))
    schema = template_schema()
    prepared = prepare(template, schema, resource_root=False)
    found = schema_errors(prepared.defaulted, schema, path)
    return (*found, *list_type_errors(prepared.defaulted, schema, path))


def _unknown_field(field: UnknownField) -> FieldError:
    fix = "remove it or check its spelling"
    if field.parent_type:  # a map where the schema wants something else
        name = field.parent.rsplit(".", 1)[-1]
        fix = f"{name} is not a map: make it {TYPE_WORDS.get(field.parent_type, field.parent_type)}"
    return FieldError(path=field.path, message=f'unknown field "{field.path}"; fix: {fix}')


def _check_kind(obj: Mapping[str, Any], errors: list[FieldError]) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version is None:
        errors.append(
            FieldError(
                path="apiVersion",
                message=f"apiVersion not set; fix: add 'apiVersion: {API_VERSION}'",
            )
        )
    elif api_version != API_VERSION:
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
    if not isinstance(name, str) or len(name) > _MAX_LABEL or not _DNS1035.match(name):
        errors.append(FieldError(path="metadata.name", message=messages.NAME_DNS1035))


# -- the CRD's CEL rules (x-kubernetes-validations), on a body that passed the schema -----------
def _check_rules(body: Mapping[str, Any], metadata: Any, errors: list[FieldError]) -> None:
    specs: dict[str, Any] = body["spec"]["tfReplicaSpecs"]
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if isinstance(name, str) and len(name) <= _MAX_LABEL and not _names_fit(name, specs):
        errors.append(FieldError(path="metadata.name", message=messages.NAME_TOO_LONG_FOR_REPLICAS))
    path = "spec.tfReplicaSpecs"
    if not specs:
        errors.append(FieldError(path=path, message=messages.NO_REPLICA_SPECS))
    lowered = [key.lower() for key in specs]
    if any(normalize_replica_type(key) is None for key in specs):
        errors.append(FieldError(path=path, message=messages.UNKNOWN_REPLICA_TYPE))
    if len(set(lowered)) != len(lowered):
        errors.append(FieldError(path=path, message=messages.DUPLICATE_REPLICA_TYPE))
    if "chief" in lowered and "master" in lowered:
        errors.append(FieldError(path=path, message=messages.CHIEF_AND_MASTER))
    if sum(r.get("replicas", 1) for r in specs.values()) > MAX_REPLICAS:
        errors.append(FieldError(path=path, message=messages.TOO_MANY_REPLICAS_IN_TOTAL))
    for key, replica in specs.items():
        replica_path: Path = (("field", "spec"), ("field", "tfReplicaSpecs"), ("key", key))
        _check_replica(replica_path, replica, errors)
    policy = (body["spec"].get("runPolicy") or {}).get("schedulingPolicy") or {}
    wanted = policy.get("minAvailable")
    if wanted is not None and wanted > sum(r.get("replicas", 1) for r in specs.values()):
        errors.append(
            FieldError(
                path="spec.runPolicy.schedulingPolicy.minAvailable",
                message=messages.MIN_AVAILABLE_ABOVE_REPLICAS,
            )
        )


def _names_fit(name: str, specs: Mapping[str, Any]) -> bool:
    """Whether `<name>-<type>-<largest index>` is a DNS label for every replica type."""
    for key, replica in specs.items():
        count = replica.get("replicas", 1)
        if count >= 1 and len(name) + len(key) + 2 + len(str(count - 1)) > _MAX_LABEL:
            return False
    return True


def _check_replica(path: Path, replica: Mapping[str, Any], errors: list[FieldError]) -> None:
    where = bracketed((*path, ("field", "replicas")))
    if replica.get("replicas", 0) < 0:
        errors.append(FieldError(path=where, message=messages.NEGATIVE_REPLICAS))
    if replica.get("replicas", 0) > MAX_REPLICAS:
        errors.append(FieldError(path=where, message=messages.TOO_MANY_REPLICAS))
    containers = replica["template"]["spec"]["containers"]
    where = bracketed((*path, ("field", "template"), ("field", "spec"), ("field", "containers")))
    if not containers:
        errors.append(FieldError(path=where, message=messages.NO_CONTAINERS))
    for i, container in enumerate(containers):
        if not container.get("image"):
            errors.append(FieldError(path=f"{where}[{i}].image", message=messages.NO_IMAGE))
    if containers and not any(c.get("name") == DEFAULT_CONTAINER_NAME for c in containers):
        errors.append(FieldError(path=where, message=messages.NO_TENSORFLOW_CONTAINER))


def _from_pydantic(exc: ValidationError) -> list[FieldError]:
    """pydantic's errors (what the schema let through but the models refuse), with
    apiserver-style paths."""
    out = []
    for err in exc.errors():
        path = _format_loc(err["loc"])
        if err["type"] == "extra_forbidden":
            message = "unknown field; fix: remove it or check its spelling"
        elif err["type"] == "missing":
            message = messages.REQUIRED
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
