"""How the benches' tables write a figure, a ratio and a row (one format for every table)."""

from __future__ import annotations

from collections.abc import Sequence


def figure(value: float | None) -> str:
    """`value` with three significant-looking digits; "-" when it was not measured."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    """`a / b` as "0.54x"; "-" when either is missing or `b` is 0."""
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def row(
    name: str, cells: Sequence[str], width: int, cell: int = 12, last: str | None = None
) -> str:
    """`name` left in `width` columns, each cell right in `cell` columns, then `last` (a note
    such as the goal a figure is held to) after two spaces when given."""
    line = f"{name:<{width}}" + "".join(f"{c:>{cell}}" for c in cells)
    return line if last is None else f"{line}  {last}"
