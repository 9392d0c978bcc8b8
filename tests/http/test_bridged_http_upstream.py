"""Handshake-only servers behind the gateway for 2026-07-28 clients. Over HTTP, the connection
the gateway opened in the handshake era carries that era's protocol-version header, never the
client's 2026-07-28 one (which the server refuses); and such a server's refusal of
server/discover reaches the client as one answer whatever the upstream transport."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types

from tests.http.gateway_harness import everything_http_upstream, gateway_front, token_entry
from tests.support.gateway import (
    everything_upstream,
    gateway_params,
    open_client,
    time_upstream,
    write_gateway_config,
)

TOKEN = "bridge-token-0123456789abcdef"


async def test_a_modern_client_uses_a_handshake_only_http_server_when_aggregated(
    tmp_path: Path,
) -> None:
    async with everything_http_upstream() as url:
        upstreams = [
            {"id": "everything", "url": url, "allow_private": ["127.0.0.1"]},
            time_upstream(),
        ]
        config = write_gateway_config(tmp_path, upstreams)
        async with open_client(gateway_params(config), mode="2026-07-28") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "everything__echo" in names, sorted(names)
            assert "time__get_current_time" in names
            result = await client.call_tool("everything__echo", {"message": "hi"})
            assert not result.is_error
            assert isinstance(result.content[0], types.TextContent)
            assert result.content[0].text == "Echo: hi"


DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_handshake_only_servers_refusal_of_discover_is_one_answer(
    tmp_path: Path, kind: str
) -> None:
    """server-everything refuses server/discover: over stdio with -32601, over HTTP with status
    400 and -32000. Through the gateway's HTTP front both are the one answer MCP gives an
    unknown method: 404 with -32601, so the client falls back to initialize either way."""
    async with contextlib.AsyncExitStack() as stack:
        if kind == "http":
            url = await stack.enter_async_context(everything_http_upstream())
            upstream: dict[str, Any] = {"id": "ev", "url": url, "allow_private": ["127.0.0.1"]}
        else:
            upstream = everything_upstream("ev")
        front = {"tokens": [token_entry(TOKEN, "client")]}
        _, front_url = await stack.enter_async_context(
            gateway_front([upstream], tmp_path / "state", front, guards=[])
        )
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "server/discover",
        }
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(front_url, headers=headers, json=DISCOVER)
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == -32601
