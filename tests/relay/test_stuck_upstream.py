"""An upstream that stops reading its stdin holds nothing but itself (issue 23, item 9): its calls
fail -32011 not_reading, it is restarted, and ping, the other upstreams and end of input go on."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcpward.testing.rawpeer import RawPeer
from tests.relay.conftest import GatewayFactory, echo_upstream

DEAF = str(Path(__file__).resolve().parents[1] / "fixtures" / "deaf_upstream.py")
HANG_GUARD_S = 60.0  # only against a hang; nothing here measures time
PAD = "p" * 300_000  # several of these fill the 64 KiB pipe and the writer's buffer


def deaf_upstream(upstream_id: str = "b") -> dict[str, Any]:
    return {
        "id": upstream_id,
        "command": sys.executable,
        "args": [DEAF],
        "restart": {"initial_backoff_s": 0.1},
    }


async def call(peer: RawPeer, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}}
    return await asyncio.wait_for(peer.request("tools/call", params), HANG_GUARD_S)


def text_of(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    return str(reply["result"]["content"][0]["text"])


async def test_a_deaf_upstream_fails_its_calls_and_holds_nothing_else(
    gateway: GatewayFactory,
) -> None:
    settings = {"upstream_send_timeout_s": 1.0, "request_timeout_s": 600}
    async with gateway([echo_upstream("a"), deaf_upstream("b")], settings=settings) as peer:
        first_pid = text_of(await call(peer, "b__pid"))
        assert text_of(await call(peer, "b__deafen")) == "deaf now"
        # A call whose frame cannot leave: the pipe is full and nobody reads it.
        stuck_call = asyncio.ensure_future(call(peer, "b__echo", {"pad": PAD}))
        # Client notifications go to every upstream; before the fix the first one that met the
        # full pipe blocked the session's read loop for good.
        for n in range(4):
            await peer.notify("notifications/roots/list_changed", {"_meta": {"pad": f"{n}{PAD}"}})
        pong = await asyncio.wait_for(peer.request("ping"), HANG_GUARD_S)
        assert pong.get("result") == {}
        assert "pad" not in text_of(await call(peer, "a__echo", {"m": 1}))

        error = (await stuck_call)["error"]
        assert error["code"] == -32011
        assert error["data"]["reason"] == "not_reading"

        # It was restarted: a fresh process answers again.
        for _ in range(200):
            reply = await call(peer, "b__pid")
            if "result" in reply:
                break
            assert reply["error"]["code"] == -32011, reply
            await asyncio.sleep(0.1)
        assert text_of(reply) != first_pid

        # Deaf again; end of input still ends the gateway (and its upstreams) promptly.
        assert text_of(await call(peer, "b__deafen")) == "deaf now"
        await peer.notify("notifications/roots/list_changed", {"_meta": {"pad": PAD}})
        await peer.notify("notifications/roots/list_changed", {"_meta": {"pad": PAD}})
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()
        await asyncio.wait_for(peer.proc.wait(), HANG_GUARD_S)
