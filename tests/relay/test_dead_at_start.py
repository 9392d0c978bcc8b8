"""An upstream that dies at start, next to a good one: its restarts back off for real (the delay
grows to the cap instead of starting over at every restart), the client is told once what
failed, and no list_changed is announced for a server that never served a list."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

from mcpward.testing.rawpeer import RawPeer
from tests.relay.conftest import GatewayFactory, echo_upstream

DIES_AT_START = {
    "id": "dead",
    "command": sys.executable,
    "args": ["-c", "import sys; sys.exit(3)"],
    "restart": {"initial_backoff_s": 0.05, "max_backoff_s": 0.4},
}
DELAY = re.compile(r"upstream dead: restart in ([0-9.]+) s")


async def _delays_until_capped(log: Path) -> list[float]:
    """The restart delays the gateway logged for `dead`, once they reached the cap twice."""
    while True:
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        delays = [float(d) for d in DELAY.findall(text)]
        if delays.count(0.4) >= 2:
            return delays
        await asyncio.sleep(0.1)


def _drain(peer: RawPeer) -> list[dict[str, Any]]:
    seen = []
    while not peer.unsolicited.empty():
        seen.append(peer.unsolicited.get_nowait())
    return seen


async def test_a_server_dead_at_start_backs_off_and_is_announced_once(
    gateway: GatewayFactory, tmp_path: Path
) -> None:
    async with gateway([echo_upstream("a"), DIES_AT_START]) as peer:
        delays = await asyncio.wait_for(_delays_until_capped(tmp_path / "gateway.log"), 60)
        assert delays[:4] == [0.05, 0.1, 0.2, 0.4], delays
        assert set(delays[4:]) == {0.4}, delays
        assert await peer.call("tools/call", {"name": "a__echo", "arguments": {}})
        seen = _drain(peer)
        methods = [m.get("method") for m in seen]
        assert not [m for m in methods if m and m.endswith("list_changed")], methods
        told = [m for m in seen if m.get("method") == "notifications/message"]
        assert len(told) == 1, seen
        assert told[0]["params"]["data"]["upstream"] == "dead"
