"""server-everything lists `get-roots-list` only to clients that declare `roots`. Clients with
and without that capability, one after the other on one gateway state (one pin store), must
never meet a HOLD: the tool's absence is no drift, and its return unchanged passes silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import types

from mcpward.store.pins_sqlite import SqlitePinStore
from tests.support.gateway import (
    everything_upstream,
    gateway_params,
    open_client,
    wait_for_tool,
    write_gateway_config,
)


async def _roots(_ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/p", name="p")])  # type: ignore[arg-type]


async def test_a_list_that_varies_with_client_capabilities_is_never_held(tmp_path: Path) -> None:
    config = write_gateway_config(tmp_path, [everything_upstream()])
    for with_roots in (True, False, True, False):
        extra: dict[str, Any] = {"list_roots_callback": _roots} if with_roots else {}
        async with open_client(gateway_params(config), mode="legacy", **extra) as client:
            if with_roots:
                await wait_for_tool(client, "get-roots-list")
                result = await client.call_tool("get-roots-list", {})
                assert not result.is_error, result
            else:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "get-roots-list" not in names
            echoed = await client.call_tool("echo", {"message": "hi"})
            assert not echoed.is_error, echoed
            holds = SqlitePinStore(tmp_path / "state").holds("everything")
            assert holds == [], [(h.name, h.reason, h.change_kinds) for h in holds]
