"""The bounds of the dashboard's streams without a server: a log buffer that drops the oldest
lines for a slow reader and counts them, and stream slots per viewer and in all."""

from __future__ import annotations

import asyncio

import pytest

from taas_operator.dashboard.access import Refusal, Viewer
from taas_operator.dashboard.local_source import LocalSource
from taas_operator.dashboard.streams import LogBuffer, StreamSlots

pytestmark = pytest.mark.fast


def test_a_slow_reader_costs_at_most_the_buffer() -> None:
    buffer: LogBuffer[int] = LogBuffer(100)
    for line in range(10_000):
        buffer.put(line)
    assert len(buffer.items) == 100
    assert buffer.take_dropped() == 9_900 and buffer.take_dropped() == 0
    assert asyncio.run(buffer.get()) == 9_900  # the newest lines are kept, in order


def test_slots_per_viewer_and_in_all() -> None:
    slots = StreamSlots(per_viewer=2, total=4)
    alice, bob, carol, dave = (
        Viewer(key=name, source=LocalSource()) for name in ("a", "b", "c", "d")
    )
    with slots.take(alice), slots.take(alice):
        with pytest.raises(Refusal) as mine, slots.take(alice):
            pass
        assert mine.value.status == 429 and "close some dashboard tabs" in mine.value.message
        # half the slots are open: another person gets half a share (1), not 2
        with slots.take(bob), pytest.raises(Refusal, match="its share"), slots.take(bob):
            pass
        with (
            slots.take(bob),
            slots.take(carol),
            pytest.raises(Refusal, match="its limit"),
            slots.take(dave),
        ):
            pass
    assert slots.open == 0 and alice.streams == 0 and bob.streams == 0 and not slots.groups
