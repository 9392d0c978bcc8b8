"""Over the HTTP front: two upstreams (HTTP and stdio) aggregated with prefixed names in both
eras, and OAuth resource-server mode with RFC 9728 metadata."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcpward.config.http_front import HttpFrontRefused
from tests.http.gateway_harness import fixture_upstream, gateway_front
from tests.http.jwt_issuer import ISSUER, TestIssuer
from tests.support.gateway import time_upstream

on_module_loop = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Setup:
    url: str
    issuer: TestIssuer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def setup(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    directory = tmp_path_factory.mktemp("aggregate")
    issuer = TestIssuer()
    jwks = issuer.write_jwks(directory / "jwks.json")
    async with fixture_upstream() as upstream_url:
        upstreams = [
            {"id": "fx", "url": upstream_url, "allow_private": ["127.0.0.1"]},
            time_upstream("time"),
        ]
        # The resource the tokens must name is this front's own URL; the port is ephemeral, so
        # the test issues tokens for the public URL configured here.
        oauth: dict[str, Any] = {
            "issuer": ISSUER,
            "resource": "https://mcp.example.test/mcp",
            "jwks_file": str(jwks),
            "required_scopes": ["mcp:tools"],
            "clients": {"ide-1": {"consent_ceiling": "full"}},
        }
        async with gateway_front(upstreams, directory / "state", {"oauth": oauth}, guards=[]) as (
            _,
            url,
        ):
            yield Setup(url, issuer)


def bearer(setup: Setup, **claims: Any) -> str:
    return setup.issuer.token(aud="https://mcp.example.test/mcp", **claims)


@on_module_loop
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_two_upstreams_are_aggregated_over_http(setup: Setup, mode: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer(setup)}"}, timeout=30)
    transport = streamable_http_client(setup.url, http_client=http)
    async with Client(transport, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"fx__test_simple_text", "time__get_current_time"} <= names
        fx = await client.call_tool("fx__test_simple_text", {})
        assert fx.content[0].text.startswith("This is a simple text")  # type: ignore[union-attr]
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not now.is_error


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/list",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}


@on_module_loop
@pytest.mark.parametrize(
    ("case", "claims", "status", "error"),
    [
        ("valid", {}, 200, None),
        ("wrong audience", {"aud": "https://other.example/mcp"}, 401, "invalid_token"),
        (
            "expired",
            {"exp": int(time.time()) - 600, "iat": int(time.time()) - 900},
            401,
            "invalid_token",
        ),
        ("missing scope", {"scope": "other"}, 403, "insufficient_scope"),
    ],
)
async def test_oauth_tokens_at_the_front(
    setup: Setup, case: str, claims: dict[str, Any], status: int, error: str | None
) -> None:
    token = setup.issuer.token(**{"aud": "https://mcp.example.test/mcp", **claims})
    headers = {**HEADERS, **MODERN, "Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(setup.url, headers=headers, json=LIST)
    assert response.status_code == status, response.text
    if error is not None:
        challenge = response.headers["www-authenticate"]
        assert f'error="{error}"' in challenge
        assert (
            'resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"'
            in challenge
        )


@on_module_loop
async def test_protected_resource_metadata_names_the_authorization_server(setup: Setup) -> None:
    base = setup.url.rsplit("/mcp", 1)[0]
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(base + "/.well-known/oauth-protected-resource/mcp")
    document = response.json()
    assert document["resource"] == "https://mcp.example.test/mcp"
    assert document["authorization_servers"] == [ISSUER]


async def test_an_unreadable_jwks_refuses_to_start(tmp_path: Path) -> None:
    oauth = {
        "issuer": ISSUER,
        "resource": "http://127.0.0.1:1/mcp",
        "jwks_file": str(tmp_path / "no.json"),
    }
    upstream = {"id": "never", "command": "true"}
    with pytest.raises(HttpFrontRefused, match="JWKS cannot be read"):
        async with gateway_front([upstream], tmp_path / "state", {"oauth": oauth}, guards=[]):
            pass
