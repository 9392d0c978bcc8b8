"""A refused upstream never starts (server_allowlist decides before spawn): its process is never
made, its items are never listed, and calls to it are denied -32013 with the guard's code; on the
stdio front and the HTTP front (whose warm spares must not start it either).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcpward.guards.server_allowlist import ServerAllowlistGuard
from mcpward.pipeline.executor import Pipeline
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import GatewayServices
from mcpward.pipeline.spec import GuardSpec, Mode
from mcpward.relay.catalog import Catalog
from mcpward.relay.refused import refused_upstreams
from tests.http.gateway_harness import gateway_front, token_entry
from tests.relay.conftest import GatewayFactory, echo_upstream

TOKEN = "refused-test-token-0123456789ab"


def allowlist(*allowed: str) -> dict[str, Any]:
    return {
        "kind": "server_allowlist",
        "id": "allow",
        "priority": 1,
        "runs_on": ["request"],
        "config": {"allowed": list(allowed)},
    }


# the pin gate and the shadowing check read a call's connection first: a refusal comes before
PIN_GATES = [
    {"kind": "rug_pull", "priority": 5, "runs_on": ["tools_list", "tool_invoke"]},
    {"kind": "tool_shadowing", "priority": 6, "runs_on": ["tools_list", "tool_invoke"]},
]


def two_upstreams(tmp_path: Path) -> tuple[list[dict[str, Any]], Path, Path]:
    """`good` (allowed) and `githab` (a typosquat of an allowed `github`); each process writes
    its pid to its own marker file when it starts."""
    good_log, rogue_log = tmp_path / "good.pids", tmp_path / "rogue.pids"
    ups = [
        echo_upstream("good", ECHO_PID_LOG=str(good_log)),
        echo_upstream("githab", ECHO_PID_LOG=str(rogue_log)),
    ]
    return ups, good_log, rogue_log


def assert_denied(reply: dict[str, Any], code: str) -> None:
    error = reply.get("error")
    assert isinstance(error, dict), reply
    assert error["code"] == -32013, reply
    assert error["data"]["guard"] == "allow" and error["data"]["code"] == code, reply


@pytest.mark.parametrize("extra", [[], PIN_GATES], ids=["allowlist", "with-pin-gates"])
async def test_stdio_a_refused_upstream_never_starts(
    tmp_path: Path, gateway: GatewayFactory, extra: list[dict[str, Any]]
) -> None:
    ups, good_log, rogue_log = two_upstreams(tmp_path)
    guards = [allowlist("good", "github"), *extra]
    async with gateway(ups, guards=guards) as peer:
        names = [t["name"] for t in (await peer.call("tools/list"))["tools"]]
        assert "good__echo" in names
        assert not [n for n in names if n.startswith("githab")], names
        await peer.call("tools/call", {"name": "good__echo", "arguments": {}})
        denied = await peer.request("tools/call", {"name": "githab__echo", "arguments": {}})
        assert_denied(denied, "upstream_typosquat")
        for method in ("prompts/list", "resources/list", "ping"):
            await peer.call(method)
    assert good_log.exists()
    assert not rogue_log.exists(), "the refused upstream's process was started"
    log = (tmp_path / "gateway.log").read_text(encoding="utf-8")
    assert log.count("upstream githab will not be started") == 1, log
    assert "upstream_typosquat" in log


async def test_http_a_refused_upstream_never_starts(tmp_path: Path) -> None:
    ups, good_log, rogue_log = two_upstreams(tmp_path)
    for up in ups:  # warm spares on the HTTP front: none may be made for the refused one
        up["processes"] = {"warm_spares": 1}
    front = {"tokens": [token_entry(TOKEN, "c")]}
    guards = [allowlist("good", "github"), *PIN_GATES]
    async with gateway_front(ups, tmp_path / "state", front, guards=guards) as (gateway, url):
        assert set(gateway.refused) == {"githab"}
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "good__echo" in names
            assert not [n for n in names if n.startswith("githab")], names
            with pytest.raises(MCPError) as denied:
                await client.call_tool("githab__echo", {})
            assert denied.value.error.code == -32013
            assert isinstance(denied.value.error.data, dict)
            assert denied.value.error.data["code"] == "upstream_typosquat"
            assert not (await client.call_tool("good__echo", {})).is_error
        await asyncio.sleep(0.5)  # a spare being warmed would have written its pid by now
    assert good_log.exists()
    assert not rogue_log.exists(), "the refused upstream's process was started"


def attached_allowlist(state: Path, identities: dict[str, str], mode: Mode | None = None) -> Any:
    spec = GuardSpec(kind="server_allowlist", id="allow", runs_on=[Phase.REQUEST], mode=mode)
    guard = ServerAllowlistGuard(spec, ServerAllowlistGuard.Options.model_validate({}))
    asyncio.run(guard.attach(GatewayServices(state, Catalog(list(identities)), identities)))
    return guard


def test_a_changed_identity_is_refused_before_start_and_shadow_mode_refuses_nothing(
    tmp_path: Path,
) -> None:
    ids = ["a", "b"]
    attached_allowlist(tmp_path, {"a": "digest-a", "b": "digest-b"})  # pins both
    moved = attached_allowlist(tmp_path, {"a": "digest-a", "b": "digest-moved"})
    refused = refused_upstreams(Pipeline([moved]), ids)
    assert set(refused) == {"b"}
    assert refused["b"].deny.code == "upstream_identity_changed"
    assert refused["b"].guard_id == "allow"
    shadow = attached_allowlist(tmp_path, {"a": "digest-a", "b": "digest-moved"}, Mode.SHADOW)
    assert refused_upstreams(Pipeline([shadow]), ids) == {}
