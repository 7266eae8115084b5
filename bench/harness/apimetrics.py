"""What the apiserver did: `apiserver_request_total` from `/metrics`, and the audit log by user.

    RequestCounts = dict[tuple[str, str], float]          # (VERB, resource[/subresource]) -> n
    parse_request_totals(metrics_text) -> RequestCounts
    diff(after, before) -> RequestCounts
    writes(counts, exclude=("leases",)) -> RequestCounts  # POST, PUT, PATCH, DELETE, APPLY
    AuditCounter(path).counts(user, since_offset) -> RequestCounts, new offset

The `/metrics` counters count every client (the apiserver's own lease renewals too, excluded
from writes); the audit log names the user, so the controller's own requests can be told apart
from the harness's.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

RequestCounts = dict[tuple[str, str], float]

WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION")
_AUDIT_VERB = {
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
}
_LINE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _key(verb: str, resource: str, subresource: str) -> tuple[str, str]:
    return verb, f"{resource}/{subresource}" if subresource else resource


def parse_request_totals(text: str) -> RequestCounts:
    """Sum `apiserver_request_total` over codes, scopes and components, by verb and resource."""
    counts: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        key = _key(
            labels.get("verb", ""), labels.get("resource", ""), labels.get("subresource", "")
        )
        counts[key] = counts.get(key, 0.0) + float(match["value"])
    return counts


def diff(after: RequestCounts, before: RequestCounts) -> RequestCounts:
    """after - before, zero entries dropped."""
    out = {k: v - before.get(k, 0.0) for k, v in after.items()}
    return {k: v for k, v in out.items() if v > 0}


def writes(counts: RequestCounts, exclude: tuple[str, ...] = ("leases",)) -> RequestCounts:
    """Only the write verbs, without `exclude`d resources (the apiserver's own leases)."""
    return {
        k: v for k, v in counts.items() if k[0] in WRITE_VERBS and k[1].split("/")[0] not in exclude
    }


def reads(counts: RequestCounts) -> RequestCounts:
    """Only GET and LIST (watches are long-lived and counted apart)."""
    return {k: v for k, v in counts.items() if k[0] in ("GET", "LIST")}


def total(counts: RequestCounts) -> float:
    return float(sum(counts.values()))


def per_resource(counts: RequestCounts, per: float) -> str:
    """`POST pods 1.00, PATCH tfjobs/status 2.00, ...` divided by `per` (e.g. jobs)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{verb} {res} {n / per:.2f}" for (verb, res), n in items)


class AuditCounter:
    """Counts the requests of one user in an apiserver audit log (Metadata level, JSON lines),
    from a byte offset on, at the ResponseComplete stage."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def offset(self) -> int:
        """Current end of the log."""
        return self.path.stat().st_size if self.path.exists() else 0

    def counts(self, user: str, since: int = 0, until: int | None = None) -> RequestCounts:
        counts: Counter[tuple[str, str]] = Counter()
        if not self.path.exists():
            return {}
        with self.path.open("rb") as handle:
            handle.seek(since)
            data = handle.read() if until is None else handle.read(max(0, until - since))
        for raw in data.splitlines():
            if b'"ResponseComplete"' not in raw or user.encode() not in raw:
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if event.get("stage") != "ResponseComplete":
                continue
            if event.get("user", {}).get("username") != user:
                continue
            ref = event.get("objectRef") or {}
            verb = _AUDIT_VERB.get(event.get("verb", ""), event.get("verb", "").upper())
            counts[_key(verb, ref.get("resource", ""), ref.get("subresource", ""))] += 1
        return dict(counts)
