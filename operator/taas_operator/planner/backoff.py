"""Exponential back-off, computed one way for every retry in TaaS.

    backoff_delay(attempt, start, cap) -> float     # seconds: start * 2**(attempt-1), at most cap

Used by the operator's work queue (a failed pass: 1 s doubling to 5 min) and by the local
kubelet of `taas run` (a crash-looping replica: 1 s doubling to 10 s).
"""

from __future__ import annotations


def backoff_delay(attempt: int, start: float, cap: float) -> float:
    """The wait before retry number `attempt` (1 for the first retry)."""
    return min(cap, start * 2 ** max(attempt - 1, 0))
