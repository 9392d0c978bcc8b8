"""What a list hides cannot be called, on the HTTP front in both eras: with the default guards
and two aggregated upstreams, a tool tool_poisoning drops and a tool tool_shadowing drops are
refused by name (-32013), the others answer (the stdio front: tests/guards/test_content_e2e.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.fixtures import content_server
from tests.http.gateway_harness import gateway_front, token_entry

TOKEN = "hidden-items-token-0123456789abcdef"
FIXTURE = str(Path(content_server.__file__).resolve())


def upstream(upstream_id: str, variant: str) -> dict[str, Any]:
    return {"id": upstream_id, "command": sys.executable, "args": [FIXTURE, "--variant", variant]}


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_hidden_tools_are_refused_by_name_in_both_eras(tmp_path: Path, mode: str) -> None:
    front = {"tokens": [token_entry(TOKEN, "hidden-items")]}
    upstreams = [upstream("main", "main"), upstream("other", "shadow")]
    async with gateway_front(upstreams, tmp_path / "state", front) as (_, url):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "main__weather" in names
            assert not {"main__add", "other__helper", "other__weather"} & names
            for name, args, code in (
                ("main__add", {"a": 1, "b": 2}, "poisoned_item"),
                ("other__helper", {"task": "x"}, "shadowing_item"),
                ("other__weather", {"city": "Oslo"}, "shadowing_item"),
            ):
                with pytest.raises(MCPError) as caught:
                    await client.call_tool(name, args)
                assert caught.value.code == -32013, name
                assert (caught.value.data or {}).get("code") == code, name
            assert (await client.call_tool("main__weather", {"city": "Oslo"})).is_error is False
