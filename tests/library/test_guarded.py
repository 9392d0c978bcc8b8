"""The in-process surface: `mcpward.guarded` around the SDK's real `ClientSession` over stdio,
against mcp-server-time from PyPI and the drifting fixture server. Pins, holds, denials and
receipts come from the same gateway core as the stdio and HTTP fronts, and the fixture's call
log shows what reached the server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from mcpward import CallDenied, ContractHeld, MCPWardError, UpstreamUnavailable, guarded
from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.vocabulary import LedgerState
from tests.library.support import DriftServer, calls_in, mcpward, sdk_session, time_server


def config(state: Path, **extra: Any) -> dict[str, Any]:
    return {"state_dir": str(state), **extra}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_server_time_in_both_eras(tmp_path: Path, mode: str) -> None:
    """The wrapper speaks to the gateway in the era the SDK session negotiated; the receipt
    says which. The ledger verifies with the CLI, the pins are the CLI's."""
    state = tmp_path / "state"
    params = time_server()
    async with (
        Client(params, mode=mode) as client,
        guarded(client, upstream_id="time", config=config(state), server=params) as gs,
    ):
        assert gs.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        listed = await gs.list_tools()
        assert {"get_current_time", "convert_time"} <= {t.name for t in listed.tools}
        result = await gs.call_tool("get_current_time", {"timezone": "UTC"})
        assert isinstance(result, types.CallToolResult) and not result.is_error
        assert isinstance(result.structured_content, dict)  # checked against the output schema
        assert result.structured_content["timezone"] == "UTC"
    calls = calls_in(state)
    era = "handshake" if mode == "legacy" else "2026-07-28"
    assert [(r["upstream"], r["name"], r["decision"], r["era"]) for r in calls] == [
        ("time", "get_current_time", "allow", era)
    ]
    assert verify_ledger(EvidencePaths.resolve(state)).state is LedgerState.OK
    code, out = mcpward("ledger", "verify", "--state-dir", str(state))
    assert code == 0, out
    code, out = mcpward("pins", "list", "--state-dir", str(state))
    assert code == 0 and "time" in out, out


async def test_the_session_outlives_the_wrapper(tmp_path: Path) -> None:
    """Leaving `guarded` closes the gateway, not the application's session."""
    async with sdk_session(time_server()) as session:
        async with guarded(session, upstream_id="time", config=config(tmp_path / "s")) as gs:
            await gs.call_tool("get_current_time", {"timezone": "UTC"})
        direct = await session.call_tool("get_current_time", {"timezone": "UTC"})
        assert not direct.is_error


async def test_concurrent_calls_on_a_session_not_yet_initialized(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with (
        stdio_client(time_server()) as (read, write),
        ClientSession(read, write) as session,
        guarded(session, upstream_id="time", config=config(state)) as gs,
    ):
        assert session.protocol_version == "2025-11-25"  # initialized by guarded()
        calls = [gs.call_tool("get_current_time", {"timezone": "UTC"}) for _ in range(20)]
        assert not [r for r in await asyncio.gather(*calls) if r.is_error]
    assert len(calls_in(state)) == 20


async def test_a_drifted_contract_is_held_on_the_first_call_without_a_list(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    server = DriftServer(tmp_path)
    async with (
        sdk_session(server.params()) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        first = await gs.call_tool("transfer", {"amount": 4})  # pins on the connection's read
        assert not first.is_error
    server.serve(1)  # the next process serves a rewritten description
    async with (
        sdk_session(server.params()) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        with pytest.raises(ContractHeld) as caught:
            await gs.call_tool("transfer", {"amount": -4})  # no tools/list first
    held = caught.value
    assert held.code == -32010 and issubclass(ContractHeld, MCPError)  # as the proxy answers
    assert (held.upstream, held.tool, held.item_kind) == ("bank", "transfer", "tool")
    assert held.change_kinds == ["description-only"]
    assert held.old_hash and held.new_hash and held.old_hash != held.new_hash
    assert held.posture == "guard"
    assert held.review is not None and held.review.startswith("mcpward pins diff bank transfer")
    assert held.accept is not None and held.new_hash in held.accept
    assert held.provenance["pin"]["how"] == "tofu"
    assert "not a verdict that the tool is unsafe" in held.provenance["meaning"]
    assert server.calls() == [("tools/call", "transfer", 0)]  # the drifted one never got it
    code, out = mcpward("holds", "--json", "--state-dir", str(state))
    assert code == 0 and "transfer" in out, out
    assert calls_in(state)[-1]["decision"] == "hold"

    # A person reviews and accepts; the next session's call passes, and its receipt says so.
    code, out = mcpward("pins", "accept", "bank", "transfer", "--by", "alice",
                        "--state-dir", str(state))  # fmt: skip
    assert code == 0, out
    async with (
        sdk_session(server.params()) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        assert not (await gs.call_tool("transfer", {"amount": -4})).is_error
    assert server.calls() == [("tools/call", "transfer", 0), ("tools/call", "transfer", 1)]
    last = calls_in(state)[-1]
    gate = next(g for g in last["guards"] if g["id"] == "rug_pull")
    assert last["decision"] == "allow" and gate["evidence"]["pinned"].startswith("accept by alice")
    assert mcpward("ledger", "verify", "--state-dir", str(state))[0] == 0


async def test_an_unchanged_contract_passes_every_judged_call(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = DriftServer(tmp_path)
    for _ in range(2):  # the second session meets its pins unchanged
        async with (
            sdk_session(server.params()) as session,
            guarded(session, upstream_id="bank", config=config(state)) as gs,
        ):
            tool = await gs.call_tool("transfer", {"amount": 1, "memo": None})
            prompt = await gs.get_prompt("greet", {"who": "ada"})
            resource = await gs.read_resource("res://ledger")
            assert isinstance(tool.content[0], types.TextContent)
            assert json.loads(tool.content[0].text)["arguments"] == {"amount": 1, "memo": None}
            assert prompt.messages and resource.contents
            assert [p.name for p in (await gs.list_prompts()).prompts] == ["greet"]
            assert [str(r.uri) for r in (await gs.list_resources()).resources] == ["res://ledger"]
    served = [("tools/call", "transfer", 0), ("prompts/get", "greet", 0),
              ("resources/read", "res://ledger", 0)]  # fmt: skip
    assert server.calls() == served * 2
    assert not [r for r in calls_in(state) if r["decision"] != "allow"]


async def test_a_contract_that_moves_mid_session_is_held_after_its_list_changed(
    tmp_path: Path,
) -> None:
    """The server changes under a live session and says so (list_changed): the next call is
    held. No timing: the test waits until its own SDK session has received the notification;
    the wrapper makes the gateway act on everything the session received before it judges."""
    state = tmp_path / "state"
    server = DriftServer(tmp_path, mode="live")
    changed = asyncio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with (
        sdk_session(server.params(), message_handler=on_message) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        assert not (await gs.call_tool("transfer", {"amount": 1})).is_error
        server.serve(1)
        await asyncio.wait_for(changed.wait(), timeout=30)  # a bound, never an assertion
        with pytest.raises(ContractHeld) as caught:
            await gs.call_tool("transfer", {"amount": 2})
        assert caught.value.change_kinds == ["description-only"]
    assert server.calls() == [("tools/call", "transfer", 0)]


async def test_a_guard_denial_raises_call_denied(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = DriftServer(tmp_path)
    deny = {
        "kind": "tool_filter",
        "runs_on": ["tools_list", "tool_invoke"],
        "config": {"rules": [{"upstream": "*", "deny": ["transfer"]}]},
    }
    async with (
        sdk_session(server.params()) as session,
        guarded(session, upstream_id="bank", config=config(state, guards=[deny])) as gs,
    ):
        assert (await gs.list_tools()).tools == []  # filtered out of the listing
        with pytest.raises(CallDenied) as denied:
            await gs.call_tool("transfer", {"amount": 1})
        assert denied.value.code == -32013 and isinstance(denied.value, MCPWardError)
        assert (denied.value.guard, denied.value.guard_code) == ("tool_filter", "tool_not_allowed")
        assert (await gs.get_prompt("greet", {})).messages
    assert server.calls() == [("prompts/get", "greet", 0)]  # the denied call never arrived
    denial = calls_in(state)[-1]
    assert (denial["decision"], denial["name"]) == ("deny", "transfer")


async def test_a_tool_hidden_from_the_list_is_refused_by_name(tmp_path: Path) -> None:
    """runs_on names the list only: what the guard hides still cannot be called (docs/guards.md,
    "What a list hides cannot be called"), in the wrapper as on the fronts."""
    state = tmp_path / "state"
    server = DriftServer(tmp_path)
    hide = {
        "kind": "tool_filter",
        "runs_on": ["tools_list"],
        "config": {"rules": [{"upstream": "*", "deny": ["transfer"]}]},
    }
    async with (
        sdk_session(server.params()) as session,
        guarded(session, upstream_id="bank", config=config(state, guards=[hide])) as gs,
    ):
        assert (await gs.list_tools()).tools == []
        with pytest.raises(CallDenied) as denied:
            await gs.call_tool("transfer", {"amount": 1})
        assert (denied.value.guard, denied.value.guard_code) == ("tool_filter", "tool_not_allowed")
    assert server.calls() == []  # the hidden tool's call never arrived


async def test_the_server_s_own_error_is_an_mcp_error_not_a_gateway_one(tmp_path: Path) -> None:
    async with (
        sdk_session(time_server()) as session,
        guarded(session, upstream_id="time", config=config(tmp_path / "s")) as gs,
    ):
        result = await gs.call_tool("get_current_time", {"timezone": "Not/AZone"})
        assert result.is_error  # a tool error is a result, as without the wrapper
        with pytest.raises(MCPError) as caught:
            await gs.request("vendor/unknown", {})
        assert not isinstance(caught.value, MCPWardError)
        assert caught.value.code == -32601


async def test_a_crashed_server_raises_upstream_unavailable(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = DriftServer(tmp_path)
    async with (
        sdk_session(server.params()) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        await gs.call_tool("transfer", {"amount": 1})
        os.kill(server.pids()[0], signal.SIGKILL)
        with pytest.raises(UpstreamUnavailable) as first:
            await gs.call_tool("transfer", {"amount": 2})
        assert first.value.reason == "crashed"
        with pytest.raises(UpstreamUnavailable) as later:
            await gs.get_prompt("greet")
        assert later.value.reason == "not_connected"  # an SDK session cannot be restarted
    assert server.calls() == [("tools/call", "transfer", 0)]
