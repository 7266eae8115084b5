"""Kubernetes resource quantities ("500m", "2Gi", "1k", "1e3", 4) read exactly.

parse_quantity(value) -> Decimal | None    # None when it is not a quantity
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)\Z")
_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    **{s: Decimal(10) ** (3 * (i + 1)) for i, s in enumerate("kMGTPE")},
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}


def parse_quantity(value: Any) -> Decimal | None:
    """`value` (a string or a number) as a Decimal; None if it is not a quantity."""
    match = _QUANTITY.match(str(value).strip())
    if match is None or match[3] not in _SUFFIX:
        return None
    return Decimal(match[1]) * Decimal(10) ** int(match[2] or 0) * _SUFFIX[match[3]]
