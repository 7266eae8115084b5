"""Kubernetes names as names: checked before they reach a URL, escaped when they do.

    check_namespace(value, field="namespace") -> str    # a DNS-1123 label, else InvalidName
    check_name(value, field="name") -> str              # a DNS-1123 subdomain, else InvalidName
    segment(value) -> str                               # one URL path segment, every '/' escaped

Every apiserver URL TaaS builds (operator, client, dashboard) takes its namespace and name
through `segment`, and every name that comes from outside (a URL path of the dashboard, a flag)
through a check first, so `..%2F..` or `a/b` can never become another path on the apiserver.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import quote

MAX_LABEL: Final = 63
MAX_SUBDOMAIN: Final = 253
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


class InvalidName(ValueError):
    """A namespace or name that Kubernetes could never have made; the message names the field."""

    def __init__(self, field: str, value: str, rule: str) -> None:
        self.field, self.value = field, value
        shown = value if len(value) <= 80 else value[:77] + "..."
        super().__init__(f"{field} {shown!r} is not a Kubernetes name: it {rule}")


def check_namespace(value: str, field: str = "namespace") -> str:
    """`value` if it is a DNS-1123 label (what every namespace is), else InvalidName."""
    if not isinstance(value, str) or not value or len(value) > MAX_LABEL:
        raise InvalidName(field, str(value), f"must be 1 to {MAX_LABEL} characters long")
    if not _LABEL.match(value):
        raise InvalidName(
            field,
            value,
            "must be lowercase letters, digits and '-', starting and ending with "
            "a letter or digit (a DNS-1123 label)",
        )
    return value


def check_name(value: str, field: str = "name") -> str:
    """`value` if it is a DNS-1123 subdomain (what every object name is), else InvalidName."""
    if not isinstance(value, str) or not value or len(value) > MAX_SUBDOMAIN:
        raise InvalidName(field, str(value), f"must be 1 to {MAX_SUBDOMAIN} characters long")
    if not _SUBDOMAIN.match(value):
        raise InvalidName(
            field,
            value,
            "must be lowercase letters, digits, '-' and '.', starting and ending "
            "with a letter or digit (a DNS-1123 subdomain)",
        )
    return value


def segment(value: str) -> str:
    """`value` as one URL path segment: '/', '%', '?', '#' and '..' can never change the path."""
    escaped = quote(value, safe="")
    return escaped.replace(".", "%2E") if escaped in (".", "..") else escaped
