"""A 2026-07-28 client reaches a handshake-only server over HTTP through the gateway's bridge:
the connection the gateway opened in the handshake era carries that era's protocol-version
header, never the client's 2026-07-28 one (which the server refuses)."""

from __future__ import annotations

from pathlib import Path

from mcp import types

from tests.http.gateway_harness import everything_http_upstream
from tests.support.gateway import gateway_params, open_client, time_upstream, write_gateway_config


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
