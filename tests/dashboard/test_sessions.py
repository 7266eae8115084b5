"""The bounds behind sign-ins, without a server: sessions end when unused, when too old and
when too many; failed sign-ins are counted per client in a window; refused tokens are
remembered for a while, a bounded number of them. (The attacks themselves, on the real
apiserver: test_per_person.py.)"""

from __future__ import annotations

import time

import pytest

from taas_operator.dashboard.access import Attempts, RecentlyRefused
from taas_operator.runtoken import Sessions

pytestmark = pytest.mark.fast


def test_sessions_end_unused_too_old_or_past_the_limit() -> None:
    sessions: Sessions[str] = Sessions(limit=3, idle=0.3, longest=0.6)
    first, second, third = (sessions.begin(v) for v in ("a", "a", "b"))
    fourth = sessions.begin("b")
    assert sessions.get(first) is None  # the oldest ended for the fourth
    assert [sessions.get(s) for s in (second, third, fourth)] == ["a", "b", "b"]
    assert sessions.count("b") == 2 and sessions.oldest_of("b") == third
    sessions.end_where("b")
    assert sessions.get(third) is None and sessions.get(fourth) is None
    time.sleep(0.2)
    assert sessions.get(second) == "a"  # used: its idle time starts again
    time.sleep(0.2)
    assert sessions.get(second) == "a"
    time.sleep(0.25)
    assert sessions.get(second) is None  # used all along, but older than `longest`
    idle = sessions.begin("c")
    time.sleep(0.35)
    assert sessions.get(idle) is None
    assert sessions.get("") is None and not sessions.held


def test_failed_sign_ins_per_client_in_a_window() -> None:
    failures = Attempts(limit=3, window=0.4, keys=2)
    for _ in range(3):
        assert failures.wait("10.0.0.1") == 0
        failures.add("10.0.0.1")
    assert 0 < failures.wait("10.0.0.1") <= 0.4
    assert failures.wait("10.0.0.2") == 0  # another client is not held back
    time.sleep(0.45)
    assert failures.wait("10.0.0.1") == 0
    for client in ("a", "b", "c"):
        failures.add(client)
    assert list(failures.seen) == ["b", "c"]  # at most `clients` remembered


def test_refused_tokens_are_remembered_briefly_and_boundedly() -> None:
    refused = RecentlyRefused(limit=2, seconds=0.3)
    refused.add("x")
    refused.add("y")
    assert "x" in refused and "y" in refused
    refused.add("z")
    assert "x" not in refused and "z" in refused
    time.sleep(0.35)
    assert "y" not in refused and "z" not in refused and not refused.until
