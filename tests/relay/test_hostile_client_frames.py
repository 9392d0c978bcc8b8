"""Issue 23, from the client: no frame stops the stdio gateway. After each hostile frame `ping`
is answered and the process is alive; a bad notification is dropped, a bad request answered."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.relay.conftest import GatewayFactory, echo_upstream

BIG = "12345678901234567890"  # 20 digits: once sent the frame down the standard-library parser


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


# Each frame is a notification the gateway must drop (or refuse at parse) and survive.
HOSTILE_NOTIFICATIONS = {
    "cancelled-list-requestId": (
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}'
    ),
    "cancelled-object-requestId": (
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}'
    ),
    "progress-object-token": (
        '{"jsonrpc":"2.0","method":"notifications/progress",'
        '"params":{"progressToken":{"a":1},"progress":1}}'
    ),
    "progress-list-token": (
        '{"jsonrpc":"2.0","method":"notifications/progress",'
        '"params":{"progressToken":[1],"progress":1}}'
    ),
    "forwarded-lone-surrogate": (
        '{"jsonrpc":"2.0","method":"notifications/roots/list_changed",'
        '"params":{"x":"\\ud800","n":' + BIG + "}}"
    ),
    "forwarded-lone-surrogate-key": (
        '{"jsonrpc":"2.0","method":"notifications/roots/list_changed",'
        '"params":{"\\udc00":' + BIG + "}}"
    ),
    "forwarded-1000-deep": (
        '{"jsonrpc":"2.0","method":"notifications/roots/list_changed",'
        '"params":{"x":' + _deep(1000) + "}}"
    ),
}


async def _ping_answers(peer, request_id: str) -> None:
    reply = await asyncio.wait_for(peer.request("ping", None, request_id=request_id), 30)
    assert reply.get("result") == {}, reply


@pytest.mark.parametrize("name", sorted(HOSTILE_NOTIFICATIONS))
async def test_a_hostile_notification_never_stops_the_gateway(
    gateway: GatewayFactory, name: str
) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        await peer.send_bytes(HOSTILE_NOTIFICATIONS[name].encode() + b"\n")
        await _ping_answers(peer, "after-" + name)
        assert peer.proc.returncode is None
        # still judged and relayed afterwards
        result = await peer.call("tools/call", {"name": "echo", "arguments": {"m": 1}})
        assert "echo" in result["content"][0]["text"]
        assert peer.proc.returncode is None


async def test_a_request_whose_id_is_a_lone_surrogate_is_answered_with_a_parse_error(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        waiter = asyncio.ensure_future(peer.expect_reply(None))
        await peer.send_bytes(
            b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping","params":{"n":'
            + BIG.encode()
            + b"}}\n"
        )
        reply = await asyncio.wait_for(waiter, 30)
        assert reply["error"]["code"] == -32700 and reply["id"] is None
        await _ping_answers(peer, "after")


@pytest.mark.parametrize(
    "params",
    [
        {"name": "echo", "arguments": {}, "_meta": {"progressToken": [1]}},
        {"name": "echo", "arguments": {}, "_meta": "not an object"},
        {"name": ["echo"], "arguments": {}},
    ],
)
async def test_a_request_of_the_wrong_shape_gets_invalid_params_with_its_id(
    gateway: GatewayFactory, params: dict
) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        reply = await asyncio.wait_for(peer.request("tools/call", params, request_id="bad"), 30)
        assert reply["error"]["code"] == -32602, reply
        await _ping_answers(peer, "after")


async def test_a_deep_request_is_refused_with_its_id(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        waiter = asyncio.ensure_future(peer.expect_reply(31))
        frame = (
            '{"jsonrpc":"2.0","id":31,"method":"tools/call",'
            '"params":{"name":"echo","arguments":{"x":' + _deep(500) + "}}}"
        )
        await peer.send_bytes(frame.encode() + b"\n")
        reply = await asyncio.wait_for(waiter, 30)
        assert reply["error"]["code"] == -32600 and "nesting deeper" in reply["error"]["message"]
        await _ping_answers(peer, "after")


async def test_an_oversized_notification_never_answers_for_an_id_in_its_params(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a")], settings={"max_frame_bytes": 2048}) as peer:
        in_flight = asyncio.ensure_future(
            peer.request("tools/call", {"name": "hang", "arguments": {}}, request_id=42)
        )
        notification = {
            "jsonrpc": "2.0",
            "method": "notifications/roots/list_changed",
            "params": {"id": 42, "blob": "x" * 5000},
        }
        await peer.send_bytes(json.dumps(notification).encode() + b"\n")
        await peer.send_bytes(json.dumps(notification).encode()[:4000] + b"z" * 70000 + b"\n")
        await _ping_answers(peer, "after")
        assert not in_flight.done(), in_flight.result()
        in_flight.cancel()


async def test_an_oversized_request_is_answered_with_its_top_level_id_only(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a")], settings={"max_frame_bytes": 2048}) as peer:
        nested = asyncio.ensure_future(peer.expect_reply(5))
        own = asyncio.ensure_future(peer.expect_reply(78))
        frame = {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"id": 5, "blob": "y" * 9000}},
            "id": 78,  # after the first 4 KB: read from the frame's end
        }
        await peer.send_bytes(json.dumps(frame, separators=(",", ":")).encode() + b"\n")
        reply = await asyncio.wait_for(own, 30)
        assert reply["error"]["code"] == -32600 and "exceeds the limit" in reply["error"]["message"]
        await _ping_answers(peer, "after")
        assert not nested.done()
        nested.cancel()
