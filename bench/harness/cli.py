"""The benchmarks' one command-line helper: a comma-separated choice (`--controllers taas,floor`,
`--workloads a,b`), checked against what exists, with the message naming the flag and the
choices.

    names = choices(args.controllers, CONTROLLERS, "--controllers")   # or parser.error(message)
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable


def choices(value: str, allowed: Iterable[str], flag: str) -> list[str]:
    """The names in `value` (comma-separated, blanks dropped), each one of `allowed`; raises
    argparse.ArgumentTypeError naming `flag`, the unknown names and the choices otherwise."""
    allowed = list(allowed)
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{flag}: unknown {', '.join(unknown) or 'empty list'}; choose from {','.join(allowed)}"
        )
    return names
