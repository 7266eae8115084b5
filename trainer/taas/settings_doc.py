"""The settings tables of the docs, generated from :class:`TrainerSettings`.

``python -m taas.settings_doc`` prints the one in ``taas``'s docstring (reStructuredText),
``python -m taas.settings_doc --markdown`` the one in docs/trainer.md; tests check that both
documents hold exactly these, so a new setting, env name or flag alias cannot be left out of
the docs. This module does not import TensorFlow.
"""

from __future__ import annotations

import sys
import textwrap

from taas.core.settings import TrainerSettings, env_names, flag_names

WIDTHS = (23, 26, 44)
HEADER = ("setting", "also read from", "meaning (default)")


def _default(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def rows() -> list[tuple[str, str, str]]:
    """(setting, other names, meaning with the default) for every setting, in model order."""
    out = []
    for name, field in TrainerSettings.model_fields.items():
        others = [*env_names(name)[1:], *flag_names(name)[1:]]
        meaning = field.description or ""
        if field.default is not None:
            meaning += f" ({_default(field.default)})"
        out.append((name, ", ".join(others), meaning))
    return out


def table() -> str:
    """The reStructuredText simple table (no indentation, no trailing newline)."""
    rule = "  ".join("=" * width for width in WIDTHS)
    lines = [rule, _line(HEADER), rule]
    for row in rows():
        cells = [
            textwrap.wrap(cell, width) or [""] for cell, width in zip(row, WIDTHS, strict=True)
        ]
        for i in range(max(len(c) for c in cells)):
            lines.append(_line(tuple(c[i] if i < len(c) else "" for c in cells)))
    lines.append(rule)
    return "\n".join(lines)


def markdown() -> str:
    """The Markdown table of docs/trainer.md: every flag and variable of each setting."""
    lines = [
        "| setting (flag) | environment | meaning (default) |",
        "| --- | --- | --- |",
    ]
    for name, field in TrainerSettings.model_fields.items():
        flags = ", ".join(f"`{flag}`" for flag in flag_names(name))
        envs = ", ".join(f"`{env}`" for env in env_names(name))
        meaning = field.description or ""
        if field.default is not None:
            meaning += f" ({_default(field.default)})"
        lines.append(f"| {flags} | {envs} | {meaning} |")
    return "\n".join(lines)


def _line(cells: tuple[str, ...]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, WIDTHS, strict=True)).rstrip()


if __name__ == "__main__":
    print(markdown() if sys.argv[1:] == ["--markdown"] else table())
