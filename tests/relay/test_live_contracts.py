"""ConnectionContracts: one shared read per connection, never a read older than the change or
the connection a caller waits past, and callers of a stale snapshot share one re-read."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpward.pipeline.services import UpstreamSnapshot
from mcpward.relay.live_contracts import ConnectionContracts


class FakeLink:
    id = "up"

    def __init__(self) -> None:
        self.generation = 1


class Reader:
    """Each read waits for `release` and returns a snapshot naming the read's number."""

    def __init__(self) -> None:
        self.started = 0
        self.release = asyncio.Event()
        self.fail = False

    async def __call__(self, link: Any) -> UpstreamSnapshot | None:
        self.started += 1
        number = self.started
        await self.release.wait()
        if self.fail:
            return None
        return UpstreamSnapshot(upstream="up", tools=[{"name": f"read{number}"}])


async def _publish(snap: UpstreamSnapshot) -> None:
    return None


def _contracts() -> tuple[ConnectionContracts, FakeLink, Reader]:
    link, reader = FakeLink(), Reader()
    return ConnectionContracts(link, reader, _publish), link, reader  # type: ignore[arg-type]


async def test_concurrent_first_callers_share_one_read() -> None:
    contracts, _, reader = _contracts()
    waiting = [asyncio.create_task(contracts.current()) for _ in range(12)]
    await asyncio.sleep(0)
    reader.release.set()
    snaps = await asyncio.gather(*waiting)
    assert reader.started == 1
    assert all(s is snaps[0] and s.tools[0]["name"] == "read1" for s in snaps)


async def test_a_list_changed_during_a_read_makes_the_next_caller_read_again() -> None:
    contracts, _, reader = _contracts()
    first = asyncio.create_task(contracts.current())
    await asyncio.sleep(0)
    contracts.invalidate()  # the change arrives while read 1 is on the wire
    reader.release.set()
    snap = await first
    assert reader.started == 2 and snap is not None and snap.tools[0]["name"] == "read2"
    assert contracts.snapshot is snap


async def test_a_new_connection_is_never_judged_by_the_old_ones_read() -> None:
    contracts, link, reader = _contracts()
    reader.release.set()
    old = await contracts.current()
    assert contracts.snapshot is old
    link.generation += 1  # restarted: another process
    assert contracts.snapshot is None
    new = await contracts.current()
    assert new is not old and reader.started == 2


async def test_stale_snapshot_callers_share_one_reread() -> None:
    contracts, _, reader = _contracts()
    reader.release.set()
    await contracts.current()
    reader.release.clear()
    rereads = [asyncio.create_task(contracts.reread()) for _ in range(16)]
    await asyncio.sleep(0)
    reader.release.set()
    snaps = await asyncio.gather(*rereads)
    assert reader.started == 2
    assert all(s is not None and s.tools[0]["name"] == "read2" for s in snaps)


async def test_a_failed_read_is_none_and_keeps_nothing() -> None:
    contracts, _, reader = _contracts()
    reader.fail = True
    reader.release.set()
    assert await contracts.reread() is None
    assert contracts.snapshot is None


async def test_current_gives_up_at_once_when_the_read_fails() -> None:
    contracts, _, reader = _contracts()
    reader.fail = True
    reader.release.set()
    assert await contracts.current() is None
    assert reader.started == 1
