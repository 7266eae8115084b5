"""The three patch types the apiserver takes, applied to a stored object (plain JSON).

    apply_patch(obj, patch, content_type) -> the patched copy   # PatchError: refused (422)

JSON patch (RFC 6902: add, remove, replace, test, copy, move), JSON merge patch (RFC 7386),
and strategic merge patch for what TaaS sends: maps merged like a merge patch, lists replaced,
`$deleteFromPrimitiveList/<field>` removing values from a list of strings, `$patch: delete`
on a map. (Merge keys of lists of objects, e.g. containers by name, are not modelled.)
"""

from __future__ import annotations

import copy
from typing import Any

DELETE_FROM = "$deleteFromPrimitiveList/"


class PatchError(ValueError):
    """A patch the apiserver would refuse."""


def apply_patch(obj: dict[str, Any], patch: Any, content_type: str) -> dict[str, Any]:
    if content_type.startswith("application/json-patch+json"):
        return _json_patch(copy.deepcopy(obj), patch)
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be a JSON object")
    if content_type.startswith("application/merge-patch+json"):
        return _merge(copy.deepcopy(obj), patch, strategic=False)
    if content_type.startswith("application/strategic-merge-patch+json"):
        return _merge(copy.deepcopy(obj), patch, strategic=True)
    raise PatchError(f"the patch type {content_type!r} is not supported")


def _merge(target: Any, patch: dict[str, Any], strategic: bool) -> Any:
    result = dict(target) if isinstance(target, dict) else {}
    if strategic and patch.get("$patch") == "delete":
        return None
    for key, value in patch.items():
        if strategic and key.startswith(DELETE_FROM):
            field = key[len(DELETE_FROM) :]
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif strategic and key.startswith("$"):
            continue  # directives such as $setElementOrder: order only
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge(result.get(key), value, strategic)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        node = _child(node, part)
    return node, parts[-1]


def _child(node: Any, part: str) -> Any:
    try:
        return node[int(part)] if isinstance(node, list) else node[part]
    except (KeyError, IndexError, ValueError, TypeError):
        raise PatchError(f"the path element {part!r} does not exist") from None


def _json_patch(doc: dict[str, Any], operations: Any) -> dict[str, Any]:
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    for operation in operations:
        op, parts = operation.get("op"), _pointer(str(operation.get("path", "")))
        if op in ("copy", "move"):
            source = _pointer(str(operation.get("from", "")))
            value = copy.deepcopy(_get(doc, source))
            if op == "move":
                _remove(doc, source)
            _add(doc, parts, value)
        elif op == "test":
            if _get(doc, parts) != operation.get("value"):
                raise PatchError(f"test failed at {operation.get('path')}")
        elif op == "remove":
            _remove(doc, parts)
        elif op == "replace":
            _remove(doc, parts)
            _add(doc, parts, operation.get("value"))
        elif op == "add":
            _add(doc, parts, operation.get("value"))
        else:
            raise PatchError(f"unknown JSON patch operation {op!r}")
    return doc


def _get(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts:
        node = _child(node, part)
    return node


def _remove(doc: Any, parts: list[str]) -> None:
    if not parts:
        raise PatchError("cannot remove the whole document")
    node, last = _parent(doc, parts)
    _child(node, last)
    if isinstance(node, list):
        del node[int(last)]
    else:
        del node[last]


def _add(doc: Any, parts: list[str], value: Any) -> None:
    if not parts:
        raise PatchError("cannot replace the whole document")
    node, last = _parent(doc, parts)
    if isinstance(node, list):
        node.insert(len(node) if last == "-" else int(last), value)
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise PatchError(f"cannot add {last!r} to a value that is not a map or a list")
