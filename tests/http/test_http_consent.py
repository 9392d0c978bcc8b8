"""Consent ceilings over the HTTP front: a read_only client neither sees nor calls a tool that may
modify or destroy; a client cannot raise its recorded ceiling, only narrow it for its session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.http.gateway_harness import fixture_upstream, gateway_front, token_entry

READ_ONLY = "read-only-token-0123456789ab"
NO_DESTRUCTIVE = "no-destructive-token-0123456"
FULL = "full-token-0123456789abcdefgh"
ACCESS = [{"kind": "access", "runs_on": ["tools_list", "tool_invoke"]}]
on_module_loop = pytest.mark.asyncio(loop_scope="module")

# In the fixture: test_simple_text declares readOnlyHint; test_tool_with_progress declares
# destructiveHint false; every other tool declares nothing (so may be destructive).
READ_ONLY_TOOLS = {"test_simple_text"}
NON_DESTRUCTIVE_TOOLS = {"test_simple_text", "test_tool_with_progress"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    directory = tmp_path_factory.mktemp("consent")
    async with fixture_upstream() as upstream_url:
        upstream = {"id": "fx", "url": upstream_url, "allow_private": ["127.0.0.1"]}
        tokens = [
            token_entry(READ_ONLY, "ro", "read_only"),
            token_entry(NO_DESTRUCTIVE, "nd", "no_destructive"),
            token_entry(FULL, "full", "full"),
        ]
        async with gateway_front([upstream], directory, {"tokens": tokens}, guards=ACCESS) as (
            _,
            front_url,
        ):
            yield front_url


def client(url: str, token: str, mode: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


@on_module_loop
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    ("token", "visible"),
    [(READ_ONLY, READ_ONLY_TOOLS), (NO_DESTRUCTIVE, NON_DESTRUCTIVE_TOOLS)],
    ids=["read_only", "no_destructive"],
)
async def test_ceiling_hides_and_denies(url: str, mode: str, token: str, visible: set[str]) -> None:
    async with client(url, token, mode) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert names == visible
        assert not (await session.call_tool("test_simple_text", {})).is_error
        with pytest.raises(MCPError) as info:
            await session.call_tool("test_error_handling", {})
        assert info.value.error.code == -32013
        assert info.value.error.data["code"] == "consent_ceiling"


@on_module_loop
async def test_full_client_sees_everything(url: str) -> None:
    async with client(url, FULL, "legacy") as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
    assert names > NON_DESTRUCTIVE_TOOLS and "test_error_handling" in names


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _last(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    lines = [
        ln[5:] for ln in response.text.splitlines() if ln.startswith("data:") and ln[5:].strip()
    ]
    return dict(json.loads(lines[-1]))


async def _legacy_tools(url: str, token: str, init_params: dict[str, Any]) -> set[str]:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
            **init_params,
        },
    }
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(url, headers=headers, json=init)
        assert response.status_code == 200, response.text
        session = {
            "Mcp-Session-Id": response.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, headers={**headers, **session}, json=note)
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        response = await http.post(url, headers={**headers, **session}, json=listing)
        await http.delete(url, headers={**headers, **session})
    return {tool["name"] for tool in _last(response)["result"]["tools"]}


async def _modern_tools(url: str, token: str, ceiling: str | None) -> httpx.Response:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    if ceiling is not None:
        meta["dev.mcpward/consentCeiling"] = ceiling
    headers = {
        **HEADERS,
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
    }
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, headers=headers, json=body)


@on_module_loop
@pytest.mark.parametrize(
    "params",
    [{"_meta": {"dev.mcpward/consentCeiling": "full"}}, {"consentCeiling": "full"}],
    ids=["_meta", "param"],
)
async def test_a_client_cannot_raise_its_ceiling(url: str, params: dict[str, Any]) -> None:
    assert await _legacy_tools(url, READ_ONLY, params) == READ_ONLY_TOOLS
    response = await _modern_tools(url, READ_ONLY, "full")
    assert {t["name"] for t in _last(response)["result"]["tools"]} == READ_ONLY_TOOLS


@on_module_loop
async def test_a_client_can_narrow_its_session(url: str) -> None:
    narrowed = {"_meta": {"dev.mcpward/consentCeiling": "read_only"}}
    assert await _legacy_tools(url, FULL, narrowed) == READ_ONLY_TOOLS
    assert (
        await _legacy_tools(url, FULL, {"consentCeiling": "no_destructive"})
        == NON_DESTRUCTIVE_TOOLS
    )
    response = await _modern_tools(url, FULL, "read_only")
    assert {t["name"] for t in _last(response)["result"]["tools"]} == READ_ONLY_TOOLS
    # ...and the narrowing is per request at 2026-07-28: the next request without it is full.
    response = await _modern_tools(url, FULL, None)
    assert "test_error_handling" in {t["name"] for t in _last(response)["result"]["tools"]}


@on_module_loop
async def test_an_unknown_ceiling_is_refused(url: str) -> None:
    response = await _modern_tools(url, FULL, "superuser")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
