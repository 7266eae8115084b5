"""Values printed the way the apiserver's field errors print them (Go's `%q`, `%v` and
encoding/json), so `taas validate` says `Invalid value: "A=1"` and `Duplicate value:
{"name":"A"}` exactly as kubectl shows them.

    show(value) -> str
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v", '"': '\\"', "\\": "\\\\"}  # fmt: skip


def _go_quote(text: str) -> str:
    """Go's %q: printable characters as they are, the rest escaped."""
    out = []
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def _go_json(value: Any) -> str:
    """Go's encoding/json: compact, keys sorted, floats without an exponent below 1e21."""
    if isinstance(value, dict):
        items = ",".join(f"{_go_json(k)}:{_go_json(value[k])}" for k in sorted(value))
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    if isinstance(value, float) and 1e-6 <= abs(value) < 1e21:
        return format(Decimal(repr(value)), "f")
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def show(value: Any) -> str:
    """A value the way the apiserver's field errors print it (`%q`, `%v`, or JSON)."""
    if isinstance(value, str):
        return _go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return _go_json(value)
