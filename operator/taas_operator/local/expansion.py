"""Kubernetes `$(VAR)` expansion, with the kubelet's exact rules.

    expand(text: str, env: Mapping[str, str]) -> str

A port of k8s.io/kubernetes third_party/forked/golang/expansion: `$(NAME)` becomes the value of
NAME when it is defined, and stays `$(NAME)` as written when it is not; `$$` is an escaped `$`
(so `$$(NAME)` gives a literal `$(NAME)`); a `$` followed by anything else, an unclosed `$(`
and a trailing `$` are kept as they are. No shell is involved: `${NAME}` and `$NAME` are plain
text.
"""

from __future__ import annotations

from collections.abc import Mapping

_OPERATOR, _OPENER, _CLOSER = "$", "(", ")"


def _read_variable(rest: str) -> tuple[str, bool, int]:
    """(text or name, is a variable, characters consumed after the `$`)."""
    if rest[0] == _OPERATOR:
        return _OPERATOR, False, 1
    if rest[0] == _OPENER:
        end = rest.find(_CLOSER, 1)
        if end != -1:
            return rest[1:end], True, end + 1
        return _OPERATOR + _OPENER, False, 1
    return _OPERATOR + rest[0], False, 1


def expand(text: str, env: Mapping[str, str]) -> str:
    """`text` with every defined `$(NAME)` replaced by its value."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == _OPERATOR and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_var, advance = _read_variable(text[cursor + 1 :])
            if is_var:
                out.append(env.get(read, f"$({read})"))
            else:
                out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]
