"""End to end through the real gateway (`mcpward run --config`) with the mutating fixture upstream:
the scenario battery under each posture, the across-restart catch, the withheld-notification
catch, on-disk tampering, and review with the CLI while the gateway runs."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.contracts import review
from mcpward.store.pins_sqlite import DB_NAME, SqlitePinStore
from tests.support.gateway import gateway_argv, gateway_params, open_client, write_gateway_config
from tests.support.raw import RawStdioSession

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mutating_server.py"
POSTURES = ("monitor", "guard", "strict")
PHASES = [
    "tools_list",
    "prompts_list",
    "resources_list",
    "tool_invoke",
    "prompt_request",
    "resource_request",
]
P, H, I = "PROCEED", "HOLD", "INCONCLUSIVE"  # noqa: E741

# scenario -> (tool it mutates, arguments valid before and after, verdict under guard, strict)
BATTERY: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "unchanged": ("make_report", {"title": "t"}, P, P),
    "added_optional": ("make_report", {"title": "t"}, P, H),
    "added_required": ("make_report", {"title": "t", "owner": "o"}, H, H),
    "removed_param": ("make_report", {"title": "t"}, H, H),
    "type_changed": ("make_report", {"title": "t"}, H, H),
    "enum_reduced": ("make_report", {"title": "t"}, H, H),
    "constraint_narrowed": ("make_report", {"title": "t"}, H, H),
    "destructive_flip": ("make_report", {"title": "t"}, I, I),
    "output_added": ("make_report", {"title": "t"}, P, H),
    "output_changed": ("summarize", {"text": "x"}, I, I),
    "description_changed": ("make_report", {"title": "t"}, H, H),
    "new_tool": ("danger_delete", {"target": "x"}, P, H),
    "marker_input": ("make_report", {"title": "t"}, H, H),
    "marker_output": ("make_report", {"title": "t"}, H, H),
    "defs_rewritten": ("configure", {"config": {"level": 1, "approver": "a"}}, H, H),
}


def fixture_upstream(upstream_id: str, control: Path, log: Path) -> dict[str, Any]:
    return {
        "id": upstream_id,
        "command": sys.executable,
        "args": [str(FIXTURE), "--control", str(control), "--log", str(log)],
    }


def rug_pull(**config: Any) -> dict[str, Any]:
    # The guard may re-read lists before a call; on a loaded machine that takes a while.
    return {"kind": "rug_pull", "runs_on": PHASES, "timeout_ms": 10000, "config": config}


def set_scenario(control: Path, scenario: str, *, notify: bool = True) -> None:
    tmp = control.with_suffix(".tmp")
    tmp.write_text(json.dumps({"scenario": scenario, "notify": notify}), encoding="utf-8")
    tmp.replace(control)


def calls(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


@asynccontextmanager
async def raw_gateway(config: Path) -> AsyncIterator[RawStdioSession]:
    session = await RawStdioSession.start(gateway_argv(config))
    try:
        await session.initialize()
        yield session
    finally:
        await session.close()


async def test_scenario_battery_under_each_posture(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    logs = {p: tmp_path / f"calls-{p}.log" for p in POSTURES}
    upstreams = [fixture_upstream(f"fx_{p}", control, logs[p]) for p in POSTURES]
    policy = {f"fx_{p}": {"posture": p} for p in POSTURES}
    config = write_gateway_config(tmp_path, upstreams, guards=[rug_pull(upstreams=policy)])
    state = tmp_path / "state"
    seen: dict[str, dict[str, str]] = {}
    async with raw_gateway(config) as gw:
        listed = await gw.request("tools/list", {})
        assert "fx_guard__make_report" in {t["name"] for t in listed["result"]["tools"]}
        for scenario, (tool, arguments, _, _) in BATTERY.items():
            # no list_changed here: the client's re-list is the view (deterministic); the
            # notification path is exercised by the tests below
            set_scenario(control, scenario, notify=False)
            await gw.request("tools/list", {})
            seen[scenario] = {}
            for posture in POSTURES:
                before = len(calls(logs[posture]))
                reply = await gw.request(
                    "tools/call", {"name": f"fx_{posture}__{tool}", "arguments": arguments}
                )
                if "error" in reply:
                    error = reply["error"]
                    assert error["code"] == -32010, (scenario, posture, error)
                    assert len(calls(logs[posture])) == before, "a held call reached the upstream"
                    data = error["data"]
                    assert data["upstream"] == f"fx_{posture}" and data["posture"] == posture
                    assert data["accept"].startswith(f"mcpward pins accept fx_{posture}")
                    seen[scenario][posture] = data["verdict"]
                else:
                    assert len(calls(logs[posture])) == before + 1
                    seen[scenario][posture] = P
            # back to a clean baseline for the next scenario
            set_scenario(control, "unchanged", notify=False)
            store = SqlitePinStore(state)
            for posture in POSTURES:
                review.revoke(store, f"fx_{posture}", every=True)
            # the gateway re-pins each upstream on its next full view (60 s: a hang guard)
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                await gw.request("tools/list", {})
                if all(store.load(f"fx_{p}").known for p in POSTURES):
                    break
                await asyncio.sleep(0.05)
            store.close()
    expected = {s: {"monitor": P, "guard": g, "strict": st} for s, (_, _, g, st) in BATTERY.items()}
    assert seen == expected


async def test_hold_review_and_accept_while_the_gateway_runs(tmp_path: Path) -> None:
    """The SDK client acting as the model (issue #25): the held tool stays listed with its
    pinned schema and a note, the client is sent a warning, the call gets the banner and never
    reaches the upstream; after `pins accept` (as the error data says) it runs."""
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    log = tmp_path / "calls.log"
    config = write_gateway_config(
        tmp_path, [fixture_upstream("fx", control, log)], guards=[rug_pull()]
    )
    warnings: list[Any] = []

    async def on_log(params: Any) -> None:
        warnings.append(params)

    async with open_client(
        gateway_params(config), mode="legacy", logging_callback=on_log
    ) as client:
        pinned = {t.name: t for t in (await client.list_tools()).tools}["make_report"]
        await client.call_tool("make_report", {"title": "t"})
        set_scenario(control, "added_required")
        listed = {t.name: t for t in (await client.list_tools()).tools}
        held_tool = listed["make_report"]  # still listed ...
        assert held_tool.input_schema == pinned.input_schema  # ... with the pinned schema
        assert "owner" not in held_tool.input_schema["properties"]
        assert "[mcpward: HELD." in (held_tool.description or "")
        assert "mcpward pins diff fx make_report" in (held_tool.description or "")
        for _ in range(50):  # the warning is sent before the list's answer; give it a moment
            if warnings:
                break
            await asyncio.sleep(0.05)
        (warning,) = warnings
        assert warning.level == "warning" and warning.logger == "mcpward"
        assert "mcpward held tool 'make_report' of upstream 'fx'" in warning.data
        assert "pins accept fx make_report" in warning.data
        with pytest.raises(MCPError) as held:
            await client.call_tool("make_report", {"title": "t", "owner": "o"})
        assert held.value.error.code == -32010
        message = held.value.error.message
        assert message.startswith("mcpward held this call before it ran: tool 'make_report'")
        assert "mcpward pins diff fx make_report" in message
        assert "mcpward pins accept fx make_report --hash" in message
        data = held.value.error.data
        assert data["change_kinds"] == ["added-required-param"]
        assert calls(log)[-1] == {"tool": "make_report", "arguments": {"title": "t"}}  # not sent
        # review in-process (the real CLI code, its own store connection) ...
        shown = CliRunner().invoke(app, ["holds", "--json", "--state-dir", str(tmp_path / "state")])
        assert [h["name"] for h in json.loads(shown.stdout)] == ["make_report"]
        diff = CliRunner().invoke(app, shlex.split(data["review"])[1:])
        assert diff.exit_code == 0 and "added-required-param" in diff.stdout
        # ... and accept from another process, exactly as the error data says
        cli = [sys.executable, "-m", "mcpward.cli.main"]
        accepted = subprocess.run(
            [*cli, *shlex.split(data["accept"])[1:]], capture_output=True, text=True
        )
        assert accepted.returncode == 0, accepted.stderr
        result = await client.call_tool("make_report", {"title": "t", "owner": "o"})
        assert not result.is_error
        relisted = {t.name: t for t in (await client.list_tools()).tools}["make_report"]
        assert "owner" in relisted.input_schema["properties"]  # the accepted contract, no note
        assert "mcpward" not in (relisted.description or "")
    assert calls(log)[-1] == {"tool": "make_report", "arguments": {"title": "t", "owner": "o"}}


async def test_contract_changed_while_down_is_held_after_sigkill_restart(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    log = tmp_path / "calls.log"
    config = write_gateway_config(
        tmp_path, [fixture_upstream("fx", control, log)], guards=[rug_pull()]
    )
    first = await RawStdioSession.start(gateway_argv(config))
    await first.initialize()
    assert "result" in await first.request(
        "tools/call", {"name": "make_report", "arguments": {"title": "t"}}
    )
    os.kill(first.pid, signal.SIGKILL)
    await first.process.wait()
    set_scenario(control, "added_required", notify=False)
    async with open_client(gateway_params(config), mode="legacy") as client:
        with pytest.raises(MCPError) as held:
            await client.call_tool("make_report", {"title": "t", "owner": "o"})
    assert held.value.error.code == -32010
    assert held.value.error.data["change_kinds"] == ["added-required-param"]
    assert len(calls(log)) == 1


async def test_mutation_without_list_changed_is_still_held(tmp_path: Path) -> None:
    """Pre-call re-validation catches a tool that may write; the periodic re-list the rest."""
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    log = tmp_path / "calls.log"
    guard = rug_pull(revalidate_ttl_s=0, relist_interval_s=0.3)
    config = write_gateway_config(tmp_path, [fixture_upstream("fx", control, log)], guards=[guard])
    async with raw_gateway(config) as gw:
        await gw.request("tools/list", {})
        set_scenario(control, "archive_required", notify=False)
        reply = await gw.request(
            "tools/call", {"name": "archive", "arguments": {"record": "r", "reason": "x"}}
        )
        assert reply["error"]["code"] == -32010
        assert reply["error"]["data"]["change_kinds"] == ["added-required-param"]
        # make_report's pin says read-only, so no re-read before its calls; the re-list finds it
        set_scenario(control, "enum_reduced", notify=False)
        deadline = asyncio.get_running_loop().time() + 60  # a hang guard, not a timing claim
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
            reply = await gw.request(
                "tools/call", {"name": "make_report", "arguments": {"title": "t"}}
            )
            if "error" in reply:
                break
        assert reply["error"]["code"] == -32010
        assert reply["error"]["data"]["change_kinds"] == ["enum-values-removed"]
    assert all(c["tool"] != "archive" for c in calls(log))


async def test_pin_store_edited_on_disk_holds_the_upstream(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    config = write_gateway_config(
        tmp_path, [fixture_upstream("fx", control, tmp_path / "c.log")], guards=[rug_pull()]
    )
    async with raw_gateway(config) as gw:
        await gw.request("tools/list", {})
    conn = sqlite3.connect(tmp_path / "state" / DB_NAME, isolation_level=None)
    conn.execute(
        "UPDATE pins SET contract = replace(contract, 'Make a report', 'Make a r3port') "
        "WHERE name = 'make_report'"
    )
    conn.close()
    async with raw_gateway(config) as gw:
        reply = await gw.request("tools/call", {"name": "summarize", "arguments": {"text": "x"}})
    error = reply["error"]
    assert error["code"] == -32010 and error["data"]["code"] == "pin_store_tampered"
    assert "mcpward pins revoke fx --all" in error["data"]["accept"]
    assert "fail verification" in error["message"]
