"""A call to a tool or prompt the upstream does not list is refused by the gateway as MCP answers an
unknown name (-32602 Invalid params, mcpward's reason `unlisted_item` in `data`), never forwarded
and never a HOLD, in both protocol eras; an unchanged listed tool still passes."""

from __future__ import annotations

import pytest

from tests.relay.conftest import GatewayFactory, echo_upstream

RUG_PULL = [
    {
        "kind": "rug_pull",
        "id": "rug_pull",
        "runs_on": ["tools_list", "tool_invoke", "prompt_request"],
    }
]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_unknown_tool_and_prompt_are_denied_not_held(
    gateway: GatewayFactory, era: str
) -> None:
    modern = era == "2026-07-28"
    meta = {"_meta": MODERN_META} if modern else {}
    async with gateway([echo_upstream("a")], guards=RUG_PULL, initialize=not modern) as peer:
        for method, params in (
            ("tools/call", {"name": "ghost", "arguments": {}}),
            ("prompts/get", {"name": "ghost", "arguments": {}}),
        ):
            reply = await peer.request(method, {**params, **meta})
            error = reply["error"]
            assert error["code"] == -32602, reply  # MCP: unknown tool or prompt
            assert error["data"]["guard"] == "rug_pull"
            assert error["data"]["code"] == "unlisted_item"
            assert "ghost" in error["message"]
        ok = await peer.request("tools/call", {"name": "echo", "arguments": {"x": 1}, **meta})
        assert "result" in ok, ok
