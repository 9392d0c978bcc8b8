"""The outbound queue of a link is bounded in bytes and keeps order (relay/outbox.py); a link
whose upstream takes nothing refuses, drops, and past its send deadline goes down."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpward.config.upstreams import RestartPolicy
from mcpward.protocol.errors import UpstreamFailure
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.relay.outbox import Outbox
from mcpward.upstreams.base import UpstreamConnection


async def test_offer_refuses_past_the_cap_and_take_keeps_order() -> None:
    box = Outbox(cap_bytes=10, generation=1)
    assert box.offer({"n": 1}, b"12345")
    assert box.offer({"n": 2}, b"12345")
    assert not box.offer({"n": 3}, b"1")  # 11 bytes would pass the cap
    assert box.queued_bytes == 10
    message, data, _ = await box.take()
    assert message == {"n": 1}
    assert not box.offer({"n": 3}, b"1")  # still counted until written
    box.written(data)
    assert box.offer({"n": 3}, b"1")
    assert (await box.take())[0] == {"n": 2}


async def test_a_frame_larger_than_the_cap_goes_alone() -> None:
    box = Outbox(cap_bytes=4, generation=1)
    assert box.offer({"big": True}, b"0123456789")
    assert not box.offer({"small": True}, b"1")
    _, data, _ = await box.take()
    box.written(data)
    assert box.queued_bytes == 0


async def test_take_waits_and_empty_follows_written() -> None:
    box = Outbox(cap_bytes=100, generation=1)
    taker = asyncio.ensure_future(box.take())
    await asyncio.sleep(0)
    assert not taker.done()
    box.offer({"n": 1}, b"abc")
    _, data, _ = await asyncio.wait_for(taker, 5)
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


class StuckConnection(UpstreamConnection):
    """Takes no bytes once started: every send waits for ever."""

    def __init__(self) -> None:
        super().__init__("stuck")
        self.closed = 0

    @property
    def identity_digest(self) -> str:
        return "stuck"

    async def start(self) -> None:
        pass

    async def send(self, message: dict[str, Any]) -> None:
        await asyncio.Event().wait()

    async def receive(self) -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def close(self) -> None:
        self.closed += 1


async def _ignore(*_: Any) -> None:
    return None


def stuck_link(send_timeout_s: float) -> tuple[UpstreamLink, StuckConnection]:
    connection = StuckConnection()
    link = UpstreamLink(
        connection,
        RestartPolicy(enabled=False),
        request_timeout_s=3600,
        connect_timeout_s=5,
        on_message=_ignore,
        on_state=_ignore,
        send_timeout_s=send_timeout_s,
        send_queue_bytes=64 * 1024,
    )
    return link, connection


async def test_a_full_send_queue_refuses_requests_and_drops_notifications() -> None:
    link, _ = stuck_link(send_timeout_s=3600)
    await link.ensure_started()
    try:
        # alone over the cap: it goes (to a writer that never finishes writing it)
        await link.notify("notifications/message", {"data": "x" * 70_000})
        await asyncio.sleep(0)
        await link.notify("notifications/message", {"data": "y"})  # dropped, not queued
        with pytest.raises(UpstreamError) as info:
            await asyncio.wait_for(link.request_raw("tools/call", {"name": "t"}), 5)
        assert info.value.reason is UpstreamFailure.NOT_READING
    finally:
        await link.close()


async def test_a_send_past_its_deadline_fails_the_calls_and_takes_the_link_down() -> None:
    link, connection = stuck_link(send_timeout_s=0.2)
    await link.ensure_started()
    try:
        with pytest.raises(UpstreamError) as info:
            await asyncio.wait_for(link.request_raw("tools/call", {"name": "t"}), 30)
        assert info.value.reason is UpstreamFailure.NOT_READING
        assert not link.up and link.last_failure is UpstreamFailure.NOT_READING
        assert connection.closed >= 1  # no restart configured: the stuck process is let go
    finally:
        await link.close()
