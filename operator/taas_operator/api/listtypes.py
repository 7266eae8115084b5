"""The `x-kubernetes-list-type` checks kube-apiserver runs on a custom resource
(apiextensions-apiserver's listtype package), offline and in its words.

    list_type_errors(value, schema, path=()) -> list[FieldError]   # on a prepared value

Lists of type `set` and `map` must not repeat an item (a map list: its key fields); the
apiserver names only each repeated item's second appearance (`Duplicate value: {"name":"A"}`),
and a map list's first item that is not an object. Map keys are written `[Worker]`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from taas_operator.api.errors import FieldError
from taas_operator.api.gofmt import show
from taas_operator.api.pruning import Path, Schema, bracketed
from taas_operator.api.structural import type_name


def list_type_errors(value: Any, schema: Schema, path: Path = ()) -> list[FieldError]:
    """Duplicates in lists of type set or map, non-objects in lists of type map."""
    errors: list[FieldError] = []
    _lists(value, schema, path, errors)
    return errors


def _lists(value: Any, schema: Schema | None, path: Path, errors: list[FieldError]) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if isinstance(extra, Mapping):
                _lists(item, extra, (*path, ("key", key)), errors)
            if key in props:
                _lists(item, props[key], (*path, ("field", key)), errors)
    elif isinstance(value, list):
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            errors += [_duplicate(path, i, value[i]) for i in _repeated(value)]
        elif kind == "map":
            errors += _map_list(value, schema.get("x-kubernetes-list-map-keys") or [], path)
        for i, item in enumerate(value):
            _lists(item, schema.get("items"), (*path, ("index", i)), errors)


def _identity(value: Any) -> str:
    """Equality as Go's map keys see it: the type counts (1 is not "1", nor 1.5)."""
    return f"{type_name(value)}:{json.dumps(value, sort_keys=True)}"


def _repeated(values: list[Any]) -> list[int]:
    """Index of each value's second appearance (the apiserver names only that one)."""
    seen: dict[str, int] = {}
    out = []
    for i, value in enumerate(values):
        ident = _identity(value)
        seen[ident] = seen.get(ident, 0) + 1
        if seen[ident] == 2:
            out.append(i)
    return out


def _duplicate(path: Path, index: int, value: Any) -> FieldError:
    return FieldError(
        path=bracketed((*path, ("index", index))), message=f"Duplicate value: {show(value)}"
    )


def _map_list(value: list[Any], keys: list[str], path: Path) -> list[FieldError]:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [
                FieldError(
                    path=bracketed((*path, ("index", i))),
                    message=f"Invalid value: {show(item)}: must be an object for an array of "
                    f"list-type map",
                )
            ]
    if len(value) <= 1:
        return []
    _unset = {"__taas_unset__": True}
    if len(keys) == 1:
        ids = [_unset if item is None or keys[0] not in item else item[keys[0]] for item in value]
        return [
            _duplicate(path, i, {} if ids[i] is _unset else {keys[0]: ids[i]})
            for i in _repeated(ids)
        ]
    combined = [{k: item[k] for k in keys if k in item} if item else {} for item in value]
    return [_duplicate(path, i, combined[i]) for i in _repeated(combined)]
