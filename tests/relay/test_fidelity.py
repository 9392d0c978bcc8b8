"""What the protocol carries passes untouched: unknown methods, unknown fields, _meta, big ints."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.relay.conftest import GatewayFactory, echo_upstream


async def test_unknown_methods_and_fields_pass_untouched(gateway: GatewayFactory) -> None:
    params = {
        "x": {"nested": [1, None, 1.5, "é", {"deep": True}]},
        "_meta": {"vendor.example/key": "v", "progressToken": "p1"},
        "big": 12345678901234567890,
        "huge": 123456789012345678901234567890,
    }
    async with gateway([echo_upstream("a")]) as peer:
        result = await peer.call("vendor/thing", params)
        assert result == {"echoMethod": "vendor/thing", "echoParams": params}


async def test_tool_call_params_are_forwarded_as_judged(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        params = {
            "name": "echo",
            "arguments": {"a": [1, 2]},
            "_meta": {"progressToken": 5, "k": "v"},
        }
        result = await peer.call("tools/call", params)
        assert json.loads(result["content"][0]["text"]) == params


async def test_unknown_notifications_pass_both_ways(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        await peer.notify("vendor/custom_note", {"n": 1})
        note = await asyncio.wait_for(peer.unsolicited.get(), 60)  # a hang guard
        assert note == {"jsonrpc": "2.0", "method": "vendor/echoed", "params": {"n": 1}}


async def test_single_upstream_initialize_is_transparent(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("solo")], initialize=False) as peer:
        result = await peer.call(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        assert result["serverInfo"]["name"] == "solo"
        assert result["protocolVersion"] == "2025-06-18"
        assert result["instructions"] == "echo instructions"


async def test_ping_is_answered(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        assert await peer.call("ping") == {}


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


async def test_input_required_results_and_retries_pass_through(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")], initialize=False) as peer:
        first = await peer.call(
            "tools/call", {"name": "mrtr", "arguments": {}, "_meta": MODERN_META}
        )
        assert first["resultType"] == "input_required"
        assert first["requestState"] == "opaque-state-1"
        retry = {
            "name": "mrtr",
            "arguments": {},
            "_meta": MODERN_META,
            "inputResponses": {"q1": {"action": "accept", "content": {"name": "x"}}},
            "requestState": first["requestState"],
        }
        second = await peer.call("tools/call", retry)
        assert json.loads(second["content"][0]["text"]) == {
            "got": retry["inputResponses"],
            "state": "opaque-state-1",
        }


SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


async def _listen(peer: Any, request_id: str, expect: int) -> list[dict[str, Any]]:
    listen = asyncio.create_task(
        peer.request(
            "subscriptions/listen",
            {"_meta": MODERN_META, "notifications": {"toolsListChanged": True}},
            request_id=request_id,
        )
    )
    seen = [await asyncio.wait_for(peer.unsolicited.get(), 10) for _ in range(expect)]
    assert not listen.done()
    listen.cancel()
    return seen


async def test_subscriptions_listen_streams_notifications(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")], initialize=False) as peer:
        seen = await _listen(peer, "my-listen", 2)
        assert [m["method"] for m in seen] == [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed",
        ]
        # The upstream tagged them with *our* listen id; the client gets its own back.
        assert all(m["params"]["_meta"][SUBSCRIPTION] == "my-listen" for m in seen)


async def test_aggregated_listen_brings_every_upstreams_notifications(
    gateway: GatewayFactory,
) -> None:
    # Each upstream sees a listen id of the gateway's own (per-link counters, so the two may be
    # equal); every notification reaches the one client subscription, under the client's id.
    async with gateway([echo_upstream("a"), echo_upstream("b")], initialize=False) as peer:
        seen = await _listen(peer, "agg", 4)
        methods = sorted(m["method"] for m in seen)
        assert methods == sorted(
            ["notifications/subscriptions/acknowledged", "notifications/tools/list_changed"] * 2
        )
        assert all(m["params"]["_meta"][SUBSCRIPTION] == "agg" for m in seen)


async def test_modern_synthesised_results_carry_result_type(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a"), echo_upstream("b")], initialize=False) as peer:
        listed = await peer.call("tools/list", {"_meta": MODERN_META})
        assert listed["resultType"] == "complete"


async def test_ping_is_the_gateways_own_and_removed_at_2026(gateway: GatewayFactory) -> None:
    """docs/conformance.md: in the handshake era the gateway answers a ping for itself (also while
    its upstream is down); at 2026-07-28 ping does not exist: -32601, as on the HTTP front."""
    async with gateway(
        [{**echo_upstream("a"), "restart": {"enabled": False}}], initialize=False
    ) as peer:
        modern = await peer.request("ping", {"_meta": MODERN_META})
        assert modern["error"]["code"] == -32601, modern
        await peer.initialize()
        assert await peer.call("ping") == {}
        crashed = await peer.request("tools/call", {"name": "crash", "arguments": {}})
        assert crashed["error"]["code"] == -32011
        assert await peer.call("ping") == {}  # the gateway's own answer: it is alive
