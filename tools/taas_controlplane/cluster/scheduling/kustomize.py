"""The small part of kustomize that Kueue's `config/components` uses, read from its own files.

    load_documents(path) -> list[dict]                 # every YAML document of a file
    merge_patch(objects, patch)                        # a strategic-merge patch, in place
    apply_replacements(objects, replacements)          # `replacements:` of a kustomization
    field(obj, "webhooks.[name=vpod.kb.io].namespaceSelector") / set_field(...)

Pure (no I/O but reading the module's files). A strategic-merge patch finds its target by kind
and name and merges maps key by key; lists of maps that carry a `name` (webhooks) merge item by
item on it; any other list is replaced. Field paths are kustomize's: dot-separated keys, with
`[name=X]` picking the list item whose `name` is X. Anything else in a kustomization raises
`KustomizeError` naming it, so a later Kueue release that uses more of kustomize fails loudly
instead of being read wrong.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

_SELECT = re.compile(r"^\[(?P<key>[^=\]]+)=(?P<value>[^\]]*)\]$")
_PART = re.compile(r"\[[^\]]*\]|[^.\[]+")


class KustomizeError(ValueError):
    """A kustomization uses something this reader does not understand; the message names it."""


def load_documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document of `path` (a module file: trusted, small)."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _merge(target: Any, patch: Any) -> Any:
    if isinstance(target, dict) and isinstance(patch, dict):
        for key, value in patch.items():
            target[key] = _merge(target[key], value) if key in target else copy.deepcopy(value)
        return target
    if (
        isinstance(target, list)
        and isinstance(patch, list)
        and all(isinstance(i, dict) and "name" in i for i in [*target, *patch])
    ):
        by_name = {item["name"]: item for item in target}
        for item in patch:
            if item["name"] in by_name:
                _merge(by_name[item["name"]], item)
            else:
                target.append(copy.deepcopy(item))
        return target
    return copy.deepcopy(patch)


def _find(objects: Iterable[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj.get("kind") == kind and (obj.get("metadata") or {}).get("name") == name:
            return obj
    raise KustomizeError(f"no {kind} named {name!r} to patch")


def merge_patch(objects: list[dict[str, Any]], patch: dict[str, Any]) -> None:
    """Apply a strategic-merge patch to the object of the same kind and name, in place."""
    target = _find(objects, patch["kind"], patch["metadata"]["name"])
    body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind", "metadata")}
    _merge(target, body)


def _step(node: Any, part: str, create: bool) -> Any:
    selected = _SELECT.match(part)
    if selected:
        if not isinstance(node, list):
            raise KustomizeError(f"{part} selects from a list, found {type(node).__name__}")
        key, value = selected["key"], selected["value"]
        for item in node:
            if isinstance(item, dict) and str(item.get(key)) == value:
                return item
        raise KustomizeError(f"no item with {key}={value}")
    if not isinstance(node, dict):
        raise KustomizeError(f"{part} is a key, found {type(node).__name__}")
    if part not in node:
        if not create:
            raise KustomizeError(f"no field {part!r}")
        node[part] = {}
    return node[part]


def _parts(path: str) -> list[str]:
    """`webhooks.[name=vpod.kb.io].namespaceSelector` -> its three parts (dots inside a
    selector are the value's own)."""
    return _PART.findall(path)


def field(obj: dict[str, Any], path: str) -> Any:
    """The value at a kustomize field path."""
    node: Any = obj
    for part in _parts(path):
        node = _step(node, part, create=False)
    return node


def set_field(obj: dict[str, Any], path: str, value: Any, create: bool = False) -> None:
    """Set the value at a kustomize field path (`create`: make the last key if missing)."""
    *parents, last = _parts(path)
    node: Any = obj
    for part in parents:
        node = _step(node, part, create=False)
    if _SELECT.match(last) or not isinstance(node, dict):
        raise KustomizeError(f"cannot set {path}")
    if last not in node and not create:
        raise KustomizeError(f"no field {last!r} in {path}")
    node[last] = copy.deepcopy(value)


def apply_replacements(objects: list[dict[str, Any]], replacements: list[dict[str, Any]]) -> None:
    """kustomize `replacements`: copy each source field to every target field path, in place."""
    for replacement in replacements:
        known = {"source", "targets"}
        if set(replacement) - known:
            raise KustomizeError(f"replacement keys {sorted(set(replacement) - known)} unknown")
        source = replacement["source"]
        value = field(_find(objects, source["kind"], source["name"]), source["fieldPath"])
        for target in replacement["targets"]:
            select = target["select"]
            obj = _find(objects, select["kind"], select["name"])
            create = bool((target.get("options") or {}).get("create"))
            for path in target["fieldPaths"]:
                set_field(obj, path, value, create=create)
