"""The OpenAPI checks kube-apiserver runs on a custom resource (kube-openapi's validators, before
the CRD's CEL rules), offline and in its words.

    schema_errors(value, schema, path=()) -> list[FieldError]   # on a `pruning.prepare`d value
    check_schema(schema)                     # raises on a keyword this module does not implement
    type_name(value) -> str                  # "string", "integer", "number", "array", ...

`<path> in body must be of type array: "object"`, `Required value`, `Unsupported value`, `Too
long`, `Too many`, minimum, maximum and pattern, each flagged `blocking` where the apiserver
then skips the CEL rules. Only the structural subset the generated TFJob schema uses is implemented;
`check_schema` refuses anything else, so a schema change cannot silently go unchecked here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from taas_operator.api.errors import FieldError
from taas_operator.api.gofmt import show
from taas_operator.api.pruning import Path, Schema, dotted

_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "description",
        "properties",
        "additionalProperties",
        "items",
        "required",
        "enum",
        "default",
        "minimum",
        "maximum",
        "maxLength",
        "maxItems",
        "maxProperties",
        "pattern",
        "anyOf",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",  # CEL: its rules are implemented in validation.py
        "x-taas-pod-enum",  # pod validation's enums (taas_controlplane.crd.structural_schema)
    }
)
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


_TYPE_NAMES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",  # whole numbers that fit an int64 were made ints by `pruning.prepare`
    str: "string",
    list: "array",
    dict: "object",
}


def type_name(value: Any) -> str:
    """The JSON type of a value, as kube-openapi names it."""
    known = _TYPE_NAMES.get(type(value))
    if known is not None:
        return known
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _type_ok(value: Any, wanted: str) -> bool:
    actual = type_name(value)
    return actual == wanted or (wanted == "number" and actual == "integer")


#: How a fix names what a schema type wants.
TYPE_WORDS = {
    "array": "a list (one '- item' per entry)",
    "object": "a map (key: value lines)",
    "string": "a string (quote it)",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "integer,string": "a whole number or a string",
}


def _type_error(path: Path, value: Any, wanted: str) -> FieldError:
    """kube-openapi's message, and (TaaS) the fix."""
    actual, where = type_name(value), dotted(path)
    name = where.rsplit(".", 1)[-1]
    return FieldError(
        path=where,
        message=f'Invalid value: "{actual}": {where} in body must be of type {wanted}: '
        f'"{actual}"; fix: make {name} {TYPE_WORDS.get(wanted, wanted)}',
        blocking=True,
    )


@lru_cache(maxsize=64)
def _regex(pattern: str) -> re.Pattern[str]:
    """The schema's pattern as Go reads it: `$` outside a class is the end of the text (`\\Z`),
    never before a final newline as in Python."""
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        out.append(char)
    return re.compile("".join(out))


def _pattern_error(path: Path, value: str, pattern: str) -> FieldError | None:
    if _regex(pattern).search(value):
        return None
    where = dotted(path)
    return FieldError(
        path=where,
        message=f"Invalid value: {show(value)}: {where} in body should match '{pattern}'",
    )


def schema_errors(value: Any, schema: Schema, path: Path = ()) -> list[FieldError]:
    """Every OpenAPI check `value` fails, the way kube-apiserver reports it."""
    errors: list[FieldError] = []
    _check(value, schema, path, errors)
    return errors


def _check(value: Any, schema: Schema, path: Path, errors: list[FieldError]) -> None:
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, str):
            bad = "pattern" in schema and _pattern_error(path, value, schema["pattern"])
            if bad:
                errors.append(bad)
        elif type_name(value) != "integer":
            errors.append(_type_error(path, value, "integer,string"))
        return
    wanted: str = schema.get("type") or ""
    wrong_type = bool(wanted) and not _type_ok(value, wanted)
    if wrong_type:
        errors.append(_type_error(path, value, wanted))
    # kube-openapi checks the enum even after a type error
    if "enum" in schema and not any(
        type_name(value) == type_name(e) and value == e for e in schema["enum"]
    ):
        allowed = ", ".join(show(e) for e in schema["enum"])
        errors.append(
            FieldError(
                path=dotted(path),
                message=f"Unsupported value: {show(value)}: supported values: {allowed}",
                blocking=True,
            )
        )
    if wrong_type:
        return
    pod_enum = schema.get("x-taas-pod-enum")
    if pod_enum and isinstance(value, str) and value and value not in pod_enum:
        # what pod validation says when the operator creates the pod (the CRD has no enum)
        allowed = ", ".join(show(e) for e in pod_enum)
        errors.append(
            FieldError(
                path=dotted(path),
                message=f"Unsupported value: {show(value)}: supported values: {allowed}",
            )
        )
    if isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        minimum = schema.get("minimum")
        if minimum is not None and value < minimum:
            where = dotted(path)
            errors.append(
                FieldError(
                    path=where,
                    message=f"Invalid value: {show(value)}: {where} in body should be greater "
                    f"than or equal to {minimum}",
                )
            )
        maximum = schema.get("maximum")
        if maximum is not None and value > maximum:
            where = dotted(path)
            errors.append(
                FieldError(
                    path=where,
                    message=f"Invalid value: {show(value)}: {where} in body should be less "
                    f"than or equal to {maximum}",
                )
            )
    elif isinstance(value, list):
        _check_array(value, schema, path, errors)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors)


def _check_string(value: str, schema: Schema, path: Path, errors: list[FieldError]) -> None:
    limit = schema.get("maxLength")
    if limit is not None and len(value) > limit:
        errors.append(
            FieldError(
                path=dotted(path),
                message=f"Too long: may not be more than {limit} bytes",
                blocking=True,
            )
        )
    bad = "pattern" in schema and _pattern_error(path, value, schema["pattern"])
    if bad:
        errors.append(bad)


def _too_many(path: Path, count: int, limit: int) -> FieldError:
    return FieldError(
        path=dotted(path),
        message=f"Too many: {count}: must have at most {limit} items",
        blocking=True,
    )


def _check_array(value: list[Any], schema: Schema, path: Path, errors: list[FieldError]) -> None:
    limit = schema.get("maxItems")
    if limit is not None and len(value) > limit:
        errors.append(_too_many(path, len(value), limit))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(item, items, (*path, ("index", i)), errors)


def _check_object(
    value: dict[str, Any], schema: Schema, path: Path, errors: list[FieldError]
) -> None:
    limit = schema.get("maxProperties")
    if limit is not None and len(value) > limit:
        errors.append(_too_many(path, len(value), limit))
    for name in schema.get("required") or ():
        if name not in value:
            errors.append(
                FieldError(
                    path=dotted((*path, ("field", name))), message="Required value", blocking=True
                )
            )
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in props:
            _check(item, props[key], (*path, ("field", key)), errors)
        elif isinstance(extra, Mapping):
            _check(item, extra, (*path, ("key", key)), errors)


def check_schema(schema: Any, where: str = "openAPIV3Schema") -> None:
    """Raise ValueError where `schema` uses something this validator does not implement."""
    if not isinstance(schema, Mapping):
        raise ValueError(f"{where}: not a schema object")
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"{where}: keywords {sorted(unknown)} are not implemented")
    if "anyOf" in schema and (
        schema["anyOf"] != _INT_OR_STRING_ANY_OF or not schema.get("x-kubernetes-int-or-string")
    ):
        raise ValueError(f"{where}: anyOf other than x-kubernetes-int-or-string")
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        if key in schema:
            check_schema(schema[key], f"{where}.{key}")
