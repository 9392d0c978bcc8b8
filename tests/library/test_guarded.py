"""The in-process surface: `mcpward.guarded` around the SDK's real `ClientSession`, against
mcp-server-time from PyPI and the drifting fixture server: pins, holds, denials and receipts come
from the same gateway core as the stdio and HTTP fronts."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from typer.testing import CliRunner

from mcpward import CallDenied, ContractHeld, guarded
from mcpward.cli.main import app
from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.vocabulary import LedgerState
from mcpward.store.ledger_sqlite import read_snapshot
from tests.support import paths

DRIFT = str(Path(__file__).resolve().parents[1] / "fixtures" / "drift_server.py")


@asynccontextmanager
async def sdk_session(command: str, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command, args=list(args))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def config(state: Path, guards: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"state_dir": str(state), "gateway": {"relist_interval_s": 0}}
    if guards is not None:
        data["guards"] = guards
    return data


def receipts(state: Path) -> list[dict[str, Any]]:
    with read_snapshot(EvidencePaths.resolve(state).ledger) as view:
        bodies = [json.loads(e.body) for e in view.entries()]
    return [b["receipt"] for b in bodies if b["kind"] == "receipt"]


async def test_a_real_server_behind_the_wrapper(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = str(paths.venv_script("mcp-server-time"))
    async with (
        sdk_session(server, "--local-timezone", "UTC") as session,
        guarded(session, upstream_id="time", config=config(state)) as gs,
    ):
        listed = await gs.list_tools()
        assert "get_current_time" in {t.name for t in listed.tools}
        result = await gs.call_tool("get_current_time", {"timezone": "UTC"})
        assert not result.is_error and result.content
    calls = [r for r in receipts(state) if r["method"] == "tools/call"]
    assert [(r["upstream"], r["name"], r["decision"]) for r in calls] == [
        ("time", "get_current_time", "allow")
    ]
    assert verify_ledger(EvidencePaths.resolve(state)).state is LedgerState.OK


def drift_server(tmp_path: Path, version: int) -> tuple[list[str], Path]:
    control = tmp_path / "control.json"
    control.write_text(json.dumps({"version": version, "annotations": "readonly"}))
    log = tmp_path / "calls.jsonl"
    return [DRIFT, "--control", str(control), "--log", str(log), "--mode", "startup"], log


def served(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [json.loads(line)["version_served"] for line in log.read_text().splitlines()]


async def test_a_drifted_contract_is_held_on_the_first_call_without_a_list(tmp_path: Path) -> None:
    state = tmp_path / "state"
    args, log = drift_server(tmp_path, 0)
    async with (
        sdk_session(sys.executable, *args) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        first = await gs.call_tool("transfer", {"amount": 4})  # pins on this first read
        assert not first.is_error
    args, log = drift_server(tmp_path, 1)  # a new process serves a rewritten description
    async with (
        sdk_session(sys.executable, *args) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        with pytest.raises(ContractHeld) as held:
            await gs.call_tool("transfer", {"amount": -4})  # no tools/list first
        assert held.value.code == -32010
        assert held.value.data["guard"] == "rug_pull"
        assert "description-only" in held.value.data["change_kinds"]
        assert "pins accept bank transfer" in held.value.data["accept"]
        origin = held.value.data["provenance"]  # where the verdict comes from
        assert origin["pin"]["how"] == "tofu" and origin["posture"] == "guard"
        assert origin["server_identity"]["digest"]
        assert "not a verdict that the tool is unsafe" in origin["meaning"]
    assert served(log) == [0]  # the drifted process never received the call
    # A person reviews and accepts; the next session's call passes, and its receipt says so.
    accepted = CliRunner().invoke(
        app, ["pins", "accept", "bank", "transfer", "--by", "alice", "--state-dir", str(state)]
    )
    assert accepted.exit_code == 0, accepted.output
    async with (
        sdk_session(sys.executable, *args) as session,
        guarded(session, upstream_id="bank", config=config(state)) as gs,
    ):
        assert not (await gs.call_tool("transfer", {"amount": -4})).is_error
    assert served(log) == [0, 1]
    last = [r for r in receipts(state) if r["method"] == "tools/call"][-1]
    gate = next(g for g in last["guards"] if g["id"] == "rug_pull")
    assert last["decision"] == "allow" and gate["evidence"]["pinned"].startswith("accept by alice")


async def test_a_guard_denial_raises_call_denied(tmp_path: Path) -> None:
    state = tmp_path / "state"
    args, log = drift_server(tmp_path, 0)
    deny = {
        "kind": "tool_filter",
        "runs_on": ["tools_list", "tool_invoke"],
        "config": {"rules": [{"upstream": "*", "deny": ["transfer"]}]},
    }
    async with (
        sdk_session(sys.executable, *args) as session,
        guarded(session, upstream_id="bank", config=config(state, [deny])) as gs,
    ):
        with pytest.raises(CallDenied) as denied:
            await gs.call_tool("transfer", {"amount": 1})
        assert denied.value.data["guard"] == "tool_filter"
        prompt = await gs.get_prompt("greet", {})
        assert prompt.messages
    assert served(log) == [0]  # the prompt reached it; the denied call did not
