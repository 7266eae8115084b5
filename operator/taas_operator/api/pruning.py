"""How kube-apiserver holds a custom resource before it validates it, offline.

    prepare(obj, schema, resource_root=True) -> Prepared   # normalised, pruned, defaulted
    Path: tuple of ("field" | "key", name) and ("index", i) parts; dotted(path), bracketed(path)

In the apiserver's order (apiextensions-apiserver 1.34): the manifest becomes JSON values as
kubectl sends them (string keys, whole numbers as integers, dates as strings); decoding records
the fields the schema does not know (`unknown field "..."`, which kubectl's default strict
validation refuses) and drops them; nulls are dropped; the schema's defaults are applied.
Paths are written as the apiserver writes them: a map key as `.Worker` in schema errors
(`dotted`), as `[Worker]` in list-type and CEL errors (`bracketed`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal, NamedTuple

PathPart = tuple[Literal["field", "key", "index"], str | int]
Path = tuple[PathPart, ...]
Schema = Mapping[str, Any]
#: Fields of a resource's root that the apiserver decodes itself, never pruned by the schema.
_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def dotted(path: Path) -> str:
    """`spec.tfReplicaSpecs.Worker.template.spec.containers[0]` (schema errors)."""
    out = ""
    for kind, name in path:
        out += f"[{name}]" if kind == "index" else (f".{name}" if out else str(name))
    return out


def bracketed(path: Path) -> str:
    """`spec.tfReplicaSpecs[Worker].template...` (list-type and CEL errors)."""
    out = ""
    for kind, name in path:
        if kind == "field":
            out += f".{name}" if out else str(name)
        else:
            out += f"[{name}]"
    return out


class UnknownField(NamedTuple):
    """A field the schema does not know; `parent_type` is the type the schema wants where the
    manifest has a map holding it (e.g. "array" for `env: {A: "1"}`), "" when that is a map."""

    path: str
    parent: str
    parent_type: str


@dataclass
class Prepared:
    """A manifest as the apiserver holds it before validating."""

    #: Unknown fields kubectl's strict validation refuses (dotted paths), sorted.
    unknown: list[UnknownField] = field(default_factory=list)
    #: Unknown fields and nulls dropped.
    pruned: Any = None
    #: `pruned` with the schema's defaults applied: what validation looks at.
    defaulted: Any = None


def prepare(obj: Any, schema: Schema, resource_root: bool = True) -> Prepared:
    """Normalise to JSON values (as kubectl's YAML-to-JSON does), prune, default."""
    unknown: list[UnknownField] = []
    pruned = _prune(_json(obj), schema, (), unknown, resource_root)
    defaulted = _copy(pruned)
    _default(defaulted, schema)
    return Prepared(unknown=sorted(unknown), pruned=pruned, defaulted=defaulted)


def _copy(value: Any) -> Any:
    """A deep copy of JSON values (much faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


_INT64 = 2**63
_SURROGATE = re.compile("[\ud800-\udfff]")


def _json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_key(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        # kubectl writes a whole float as Go does (shortest digits, no exponent below 1e21)
        # and the apiserver reads such a number as an int64 when it fits
        number = int(Decimal(repr(value)))
        return number if -_INT64 <= number < _INT64 else value
    if isinstance(value, str) and _SURROGATE.search(value):
        # a JSON file's escaped "\\ud83d\\ude00" reaches PyYAML as two halves of one character
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _sub_schema(schema: Schema | None, key: str) -> tuple[bool, Schema | None]:
    """(known, schema) of an object's field `key`."""
    if schema is None:
        return False, None
    props = schema.get("properties") or {}
    if key in props:
        return True, props[key]
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return True, extra
    return False, None


def _prune(
    value: Any, schema: Schema | None, path: Path, unknown: list[UnknownField], root: bool
) -> Any:
    keep_unknown = schema is not None and bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if root and key in _ROOT_FIELDS:
                out[key] = item
                continue
            known, sub = _sub_schema(schema, key)
            if not known and keep_unknown:
                out[key] = item
            # The apiserver drops a null without a default and defaults one with a default (no
            # field of the schema is nullable): dropping both is the same once `_default` ran.
            # An unknown field holding null is dropped without a word, like kubectl does.
            elif item is None:
                continue
            elif not known:
                wanted = (schema or {}).get("type", "")
                unknown.append(
                    UnknownField(
                        dotted((*path, ("field", key))),
                        dotted(path),
                        "" if wanted == "object" else wanted,
                    )
                )
                continue
            kind: Literal["field", "key"] = (
                "field" if key in ((schema or {}).get("properties") or {}) else "key"
            )
            out[key] = _prune(item, sub, (*path, (kind, key)), unknown, False)
        return out
    if isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        return [
            _prune(item, items, (*path, ("index", i)), unknown, False)
            for i, item in enumerate(value)
        ]
    return value


def _default(value: Any, schema: Schema | None) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, prop in props.items():
            if "default" in prop and (key not in value or value[key] is None):
                value[key] = _copy(prop["default"])
        extra = schema.get("additionalProperties")
        for key in value:
            if key in props:
                _default(value[key], props[key])
            elif isinstance(extra, Mapping):
                if value[key] is None and "default" in extra:
                    value[key] = _copy(extra["default"])
                _default(value[key], extra)
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            if item is None and items is not None and "default" in items:
                value[i] = _copy(items["default"])
            _default(value[i], items)
