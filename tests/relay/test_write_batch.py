"""Frames written in one event-loop iteration leave together (streams/write_batch.py)."""

from __future__ import annotations

import asyncio

import pytest

from mcpward.streams.write_batch import FLUSH_AT_BYTES, WriteBatch


def test_first_frame_at_once_the_rest_of_the_iteration_together_in_order() -> None:
    async def scenario() -> list[bytes]:
        written: list[bytes] = []
        batch = WriteBatch(written.append)
        batch.write(b"1\n")
        assert written == [b"1\n"]  # a lone frame is not delayed
        batch.write(b"2\n")
        batch.write(b"3\n")
        assert written == [b"1\n"] and batch.pending_bytes == 4
        await asyncio.sleep(0)
        assert written == [b"1\n", b"2\n3\n"] and batch.pending_bytes == 0
        await asyncio.sleep(0)
        batch.write(b"4\n")  # a new iteration: at once again
        return written

    assert asyncio.run(scenario()) == [b"1\n", b"2\n3\n", b"4\n"]


def test_flush_and_the_size_bound_write_at_once() -> None:
    async def scenario() -> list[bytes]:
        written: list[bytes] = []
        batch = WriteBatch(written.append)
        batch.write(b"a")
        batch.write(b"b")
        batch.flush()
        assert written == [b"a", b"b"]
        big = b"x" * FLUSH_AT_BYTES
        batch.write(big)
        assert written[-1] == big
        return written

    asyncio.run(scenario())


def test_a_failed_deferred_write_is_raised_by_the_next_write() -> None:
    async def scenario() -> None:
        calls: list[bytes] = []

        def write(data: bytes) -> None:
            calls.append(data)
            if len(calls) > 1:
                raise BrokenPipeError

        batch = WriteBatch(write)
        batch.write(b"1")
        batch.write(b"2")
        await asyncio.sleep(0)
        with pytest.raises(BrokenPipeError):
            batch.write(b"3")

    asyncio.run(scenario())
