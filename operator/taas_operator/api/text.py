"""Status text made safe to show (`printable(text)`) and to store (`bounded(text)`).

A TFJob's conditions, events and pod reasons are written by whoever may write the job's status
or its pods, and end up on a user's terminal (`taas get`, `taas wait`, `taas submit`, `taas run`)
and in the operator's /metrics labels. A terminal obeys escape sequences (clear the screen, set
the window title, rewrite earlier lines), so every control character is shown as a visible
escape instead: C0 controls (newline and tab included: one line, one table cell), DEL, C1
controls, and the Unicode bidirectional overrides that reorder what is shown.

    printable("\x1b[2J\x1b]0;pwned\x07") == "\\x1b[2J\\x1b]0;pwned\\x07"
    printable("two\nlines") == "two\\nlines"

The operator's condition and event messages carry text of the pods (a container's termination
message, an eviction's reason: up to 4 KiB each, several per job): `bounded` keeps each message
to MESSAGE_LIMIT characters, what `kubectl describe` shows whole, and says it was cut.
"""

from __future__ import annotations

import re

#: The longest condition or event message the operator writes (characters).
MESSAGE_LIMIT = 1024
_CUT = " ... (cut: longer than 1024 characters)"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character (and bidi override) written as a visible escape."""
    return _UNSAFE.sub(_escape, text)


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` when it has at most `limit` characters, else its start, cut to fit with a note
    saying so."""
    if len(text) <= limit:
        return text
    return text[: limit - len(_CUT)] + _CUT
