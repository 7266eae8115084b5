"""The lines of an apiserver stream (`apiserver.transport.bounded_lines`): any line up to the
bound whatever its chunks, a longer one refused before it is held whole. Pure: no I/O."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from taas_operator.apiserver.transport import MAX_LINE_BYTES, LineTooLong, bounded_lines


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _lines(*parts: bytes, limit: int = 10) -> list[bytes]:
    async def read() -> list[bytes]:
        return [line async for line in bounded_lines(_chunks(*parts), limit)]

    return asyncio.run(read())


def test_lines_across_chunks() -> None:
    assert _lines(b"ab\ncd", b"e\n\nf", b"gh\n", b"ij") == [b"ab", b"cde", b"", b"fgh", b"ij"]
    assert _lines(b"0123456789\n", b"01234", b"56789\n") == [b"0123456789", b"0123456789"]
    assert _lines() == [] and _lines(b"") == []


def test_a_line_past_the_bound_is_refused() -> None:
    with pytest.raises(LineTooLong, match="longer than 10 bytes"):
        _lines(b"ok\n012345", b"67890\n")
    with pytest.raises(LineTooLong):
        _lines(b"01234567890")  # never ended


def test_the_bound_holds_what_the_apiserver_stores() -> None:
    # etcd refuses requests over 1.5 MiB; a watch event adds its envelope to the object.
    assert MAX_LINE_BYTES >= 2 * 1536 * 1024
    event = b'{"type":"ADDED","object":' + b"x" * (1536 * 1024) + b"}\n"
    chunks = [event[i : i + 65536] for i in range(0, len(event), 65536)]
    assert _lines(*chunks, limit=MAX_LINE_BYTES) == [event[:-1]]
