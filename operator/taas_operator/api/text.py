"""Status text made safe to show: `printable(text)`.

A TFJob's conditions, events and pod reasons are written by whoever may write the job's status
or its pods, and end up on a user's terminal (`taas get`, `taas wait`, `taas submit`, `taas run`)
and in the operator's /metrics labels. A terminal obeys escape sequences (clear the screen, set
the window title, rewrite earlier lines), so every control character is shown as a visible
escape instead: C0 controls (newline and tab included: one line, one table cell), DEL, C1
controls, and the Unicode bidirectional overrides that reorder what is shown.

    printable("\x1b[2J\x1b]0;pwned\x07") == "\\x1b[2J\\x1b]0;pwned\\x07"
    printable("two\nlines") == "two\\nlines"
"""

from __future__ import annotations

import re

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
