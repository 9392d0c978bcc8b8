"""The three ways the SDK client reaches a server: directly over stdio, through `mcpward run`'s
stdio front (the quick form, default guards) and through an HTTP front (default guards)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.gateway import ClientMode, quick_params

TOKEN = "differential-token-0123456789abcdef"
TARGETS = ("direct", "stdio-front", "http-front")


def direct_params(upstream: Mapping[str, Any]) -> StdioServerParameters:
    return StdioServerParameters(command=upstream["command"], args=list(upstream["args"]))


@contextlib.asynccontextmanager
async def http_front(upstream: Mapping[str, Any], state_dir: Path) -> AsyncIterator[str]:
    """An in-process gateway serving `upstream` on an HTTP front; yields the MCP URL."""
    front = {"tokens": [token_entry(TOKEN, "differential")]}
    async with gateway_front([dict(upstream)], state_dir, front) as (_, url):
        yield url


def client_for(
    target: str,
    upstream: Mapping[str, Any],
    *,
    mode: ClientMode,
    state_dir: Path,
    url: str | None,
    **kwargs: Any,
) -> Client:
    """An SDK client (response cache off: the test must see the wire) on one target."""
    kwargs.update(mode=mode, cache=None, read_timeout_seconds=30.0)
    if target == "direct":
        return Client(direct_params(upstream), **kwargs)
    if target == "stdio-front":
        command = [upstream["command"], *upstream["args"]]
        return Client(
            quick_params(command, state_dir=state_dir, upstream_id=upstream["id"]), **kwargs
        )
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    assert url is not None
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), **kwargs)
