"""The outbound queue of a link is bounded in bytes and keeps order (relay/outbox.py)."""

from __future__ import annotations

import asyncio

from mcpward.relay.outbox import Outbox


async def test_offer_refuses_past_the_cap_and_take_keeps_order() -> None:
    box = Outbox(cap_bytes=10, generation=1)
    assert box.offer({"n": 1}, b"12345")
    assert box.offer({"n": 2}, b"12345")
    assert not box.offer({"n": 3}, b"1")  # 11 bytes would pass the cap
    assert box.queued_bytes == 10
    message, data = await box.take()
    assert message == {"n": 1}
    assert not box.offer({"n": 3}, b"1")  # still counted until written
    box.written(data)
    assert box.offer({"n": 3}, b"1")
    assert (await box.take())[0] == {"n": 2}


async def test_a_frame_larger_than_the_cap_goes_alone() -> None:
    box = Outbox(cap_bytes=4, generation=1)
    assert box.offer({"big": True}, b"0123456789")
    assert not box.offer({"small": True}, b"1")
    _, data = await box.take()
    box.written(data)
    assert box.queued_bytes == 0


async def test_take_waits_and_empty_follows_written() -> None:
    box = Outbox(cap_bytes=100, generation=1)
    taker = asyncio.ensure_future(box.take())
    await asyncio.sleep(0)
    assert not taker.done()
    box.offer({"n": 1}, b"abc")
    _, data = await asyncio.wait_for(taker, 5)
    emptied = asyncio.ensure_future(box.empty())
    await asyncio.sleep(0)
    assert not emptied.done()
    box.written(data)
    await asyncio.wait_for(emptied, 5)


async def test_drop_all_returns_what_waited() -> None:
    box = Outbox(cap_bytes=100, generation=1)
    box.offer({"n": 1}, b"a")
    box.offer({"n": 2}, b"b")
    assert box.drop_all() == [{"n": 1}, {"n": 2}]
    assert box.queued_bytes == 0
