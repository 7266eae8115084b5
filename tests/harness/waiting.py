"""The tests' one wait: poll a probe until it answers, and fail saying what was awaited.

    job = wait(lambda: api.get(path), "the TFJob", timeout=20)      # its truthy answer
    wait(lambda: not pods(), "every pod gone", timeout=60, every=1.0)

A probe returns something truthy when the wait is over (that value is returned), or None,
False, an empty list while it is not. On timeout the test fails with an AssertionError naming
`what` and the probe's last answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait(probe: Callable[[], T | None], what: str, timeout: float = 20.0, every: float = 0.1) -> T:
    """Call `probe` every `every` seconds until it returns something truthy and return that;
    after `timeout` seconds raise AssertionError naming `what` and the last answer."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
