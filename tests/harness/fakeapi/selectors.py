"""Label and field selectors, parsed as the apiserver reads them.

Labels.parse("a=b,c!=d,e in (x,y),f,!g").matches(labels) -> bool
Fields.parse("involvedObject.name=x,metadata.namespace!=y").matches(obj) -> bool
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_SET = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")

Requirement = Callable[[Mapping[str, str]], bool]


class SelectorError(ValueError):
    """A selector the apiserver would refuse (400)."""


def _split(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _requirement(term: str) -> Requirement:
    found = _EQ.match(term)
    if found:
        key, op, value = found.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    found = _SET.match(term)
    if not found:
        raise SelectorError(f"unable to parse requirement: {term!r}")
    negated, key, op, values = found.groups()
    if op:
        allowed = {v.strip() for v in values.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    if negated:
        return lambda labels: key not in labels
    return lambda labels: key in labels


@dataclass(frozen=True)
class Labels:
    """A parsed label selector (empty: everything)."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> Labels:
        return cls(tuple(_requirement(term) for term in _split(text or "")))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        found = labels or {}
        return all(requirement(found) for requirement in self.requirements)


def field_value(obj: Mapping[str, Any], dotted: str) -> str:
    """The value at a dotted path, as a field selector compares it (missing: "")."""
    value: Any = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Fields:
    """A parsed field selector (empty: everything)."""

    terms: tuple[tuple[str, bool, str], ...] = ()  # (field, equal, value)

    @classmethod
    def parse(cls, text: str | None) -> Fields:
        terms = []
        for term in _split(text or ""):
            found = _EQ.match(term)
            if not found:
                raise SelectorError(f"invalid field selector: {term!r}")
            field, op, value = found.groups()
            terms.append((field, op != "!=", value))
        return cls(tuple(terms))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, f) == v) == equal for f, equal, v in self.terms)
