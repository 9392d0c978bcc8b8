"""Bad input gets a specific JSON-RPC error and the session goes on; stdout carries only frames."""

from __future__ import annotations

import json

from tests.relay.conftest import GatewayFactory, echo_upstream


async def call_echo(peer, **extra) -> dict:
    return await peer.call("tools/call", {"name": "echo", "arguments": {"m": 1}, **extra})


async def test_malformed_json_gets_parse_error_and_the_session_goes_on(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        waiter = peer.expect_reply(None)
        await peer.send_bytes(b'{"jsonrpc": "2.0", "id": 9, "method": \n')
        error = (await waiter)["error"]
        assert error["code"] == -32700 and "parse error" in error["message"]
        assert "echo" in (await call_echo(peer))["content"][0]["text"]


async def test_invalid_requests_get_invalid_request(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        for frame, rid in [
            (b'{"jsonrpc":"1.0","id":3,"method":"tools/list"}', 3),
            (b'[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]', None),
            (b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1,2]}', 5),
            (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None),
            (b'"just a string"', None),
        ]:
            waiter = peer.expect_reply(rid)
            await peer.send_bytes(frame + b"\n")
            reply = await waiter
            assert reply["error"]["code"] == -32600, (frame, reply)
            assert reply["id"] == rid
        assert await call_echo(peer)


async def test_unknown_tool_is_invalid_params(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        reply = await peer.request("tools/call", {"name": "no-such-tool", "arguments": {}})
        assert reply["error"]["code"] == -32602
        reply = await peer.request("tools/call", {"name": "echo", "arguments": "not an object"})
        assert reply["error"]["code"] == -32602
        assert await call_echo(peer)


async def test_oversized_client_frame_is_refused_with_its_id(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")], settings={"max_frame_bytes": 2048}) as peer:
        frame = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 77,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"blob": "y" * 5000}},
            }
        )
        waiter = peer.expect_reply(77)
        await peer.send_bytes(frame.encode() + b"\n")
        reply = await waiter
        assert (
            reply["error"]["code"] == -32600
            and "exceeds the limit of 2048 bytes" in reply["error"]["message"]
        )
        assert await call_echo(peer)


async def test_oversized_upstream_frame_is_refused_promptly(gateway: GatewayFactory) -> None:
    async with gateway(
        [echo_upstream("a", ECHO_BIG="20000")], settings={"max_frame_bytes": 4096}
    ) as peer:
        reply = await peer.request("tools/call", {"name": "big", "arguments": {}})
        assert reply["error"]["code"] == -32011
        assert reply["error"]["data"]["reason"] == "frame_too_large"
        assert await call_echo(peer)


async def test_only_protocol_frames_reach_stdout(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")], initialize=False) as peer:
        peer.keep_raw = True
        await peer.initialize()
        result = await peer.call("tools/call", {"name": "stray", "arguments": {}})
        assert result["content"][0]["text"] == "after stray"
        await call_echo(peer)
        assert peer.raw_lines
        for line in peer.raw_lines:
            assert json.loads(line)["jsonrpc"] == "2.0"
