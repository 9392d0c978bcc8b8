"""Evidence through the real gateway (`mcpward run --config`): receipts, shadow mode, kill -9.

The gateway is a black box started as a subprocess; the ledger is read back from its state dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from mcp.shared.exceptions import MCPError

from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.recorder import build_recorder
from mcpward.evidence.schemas import receipt_schema
from mcpward.evidence.settings import EvidencePaths, EvidenceSettings
from mcpward.evidence.vocabulary import LedgerState
from mcpward.protocol.canonical import canonical_sha256
from mcpward.store.ledger_sqlite import read_snapshot
from tests.support.gateway import (
    demo_upstream,
    gateway_argv,
    gateway_params,
    open_client,
    tool_filter_guard,
    write_gateway_config,
)

DENIED = -32013
VALIDATOR = jsonschema.Draft202012Validator(receipt_schema())


def ledger_paths(directory: Path) -> EvidencePaths:
    return EvidencePaths.resolve(directory / "state")


def receipts(directory: Path) -> list[dict[str, Any]]:
    paths = ledger_paths(directory)
    assert paths.ledger.exists(), "the gateway wrote no ledger (is the recorder wired in?)"
    with read_snapshot(paths.ledger) as view:
        entries = [orjson.loads(e.body) for e in view.entries()]
    found = [e["receipt"] for e in entries if e["kind"] == "receipt"]
    for receipt in found:
        VALIDATOR.validate(receipt)
    return found


def config_for(
    directory: Path,
    *,
    gateway: dict[str, Any] | None = None,
    guards: list[dict[str, Any]] | None = None,
    **evidence: Any,
) -> Path:
    return write_gateway_config(
        directory,
        [demo_upstream()],
        guards=guards or [tool_filter_guard("delete_*")],
        gateway={"relist_interval_s": 0, **(gateway or {})},
        extra={"evidence": evidence} if evidence else None,
    )


async def test_every_decision_through_the_gateway_has_a_receipt(tmp_path: Path) -> None:
    # A second filter in shadow mode (per guard): `add` would be denied, but proceeds.
    watcher = {**tool_filter_guard("add"), "id": "add_watch", "mode": "shadow", "priority": 20}
    config = config_for(tmp_path, guards=[tool_filter_guard("delete_*"), watcher])
    async with open_client(gateway_params(config), mode="legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "delete_file" not in names and "echo" in names
        result = await client.call_tool("echo", {"message": "hello"})
        assert not result.is_error
        with pytest.raises(MCPError) as denied:
            await client.call_tool("delete_file", {"path": "/etc/passwd"})
        assert denied.value.code == DENIED
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert not added.is_error
    found = receipts(tmp_path)
    by_name = {(r["method"], r["name"]): r for r in found}

    echo = by_name[("tools/call", "echo")]
    assert echo["decision"] == "allow"
    assert echo["upstream"] == "demo"
    assert echo["input_hash"] == canonical_sha256({"message": "hello"})
    assert echo["output_hash"] is not None and echo["error_code"] is None
    assert echo["declared_side_effects"] == [
        "read_only",
        "non_destructive",
        "idempotent",
        "closed_world",
    ]
    assert echo["required_mode"] == "read"
    assert [g["id"] for g in echo["guards"]] == ["tool_filter", "add_watch"]
    assert echo["actor_id"] and echo["client_id"] == "stdio"

    delete = by_name[("tools/call", "delete_file")]
    assert delete["decision"] == "deny"
    assert delete["stopped_by"] == "tool_filter"
    assert delete["error_code"] == DENIED
    assert delete["input_hash"] == canonical_sha256({"path": "/etc/passwd"})
    assert delete["output_hash"] is None

    add = by_name[("tools/call", "add")]
    assert add["decision"] == "would_deny_dry_run"
    assert [(g["id"], g["outcome"], g["shadow"]) for g in add["guards"]] == [
        ("tool_filter", "allow", False),
        ("add_watch", "deny", True),
    ]

    listing = [r for r in found if r["method"] == "tools/list"]
    assert listing and listing[0]["decision"] == "modify"  # delete_file was hidden

    ledger_file = ledger_paths(tmp_path).ledger
    wal = ledger_file.with_name(ledger_file.name + "-wal")
    stored = ledger_file.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert b"/etc/passwd" not in stored and b"hello" not in stored  # hashes only
    report = verify_ledger(ledger_paths(tmp_path))
    assert report.state is LedgerState.OK, report.to_dict()  # the clean shutdown signed the end
    assert report.uncheckpointed == 0


async def test_shadow_mode_lets_the_denied_call_through_and_records_it(tmp_path: Path) -> None:
    config = config_for(tmp_path, gateway={"mode": "shadow"})
    async with open_client(gateway_params(config), mode="legacy") as client:
        result = await client.call_tool("delete_file", {"path": "/tmp/x"})
        assert not result.is_error
        assert "deleted /tmp/x" in result.content[0].text  # type: ignore[union-attr]
    (delete,) = [r for r in receipts(tmp_path) if r["name"] == "delete_file"]
    assert delete["decision"] == "would_deny_dry_run"
    assert delete["error_code"] is None and delete["output_hash"] is not None
    (run,) = delete["guards"]
    assert (run["id"], run["outcome"], run["shadow"], run["code"]) == (
        "tool_filter", "deny", True, "tool_not_allowed",
    )  # fmt: skip
    assert verify_ledger(ledger_paths(tmp_path)).state is LedgerState.OK


# ---- kill -9 under load ---------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc), so the orphaned upstream can be reaped by pid."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found += [int(p) for p in handle.read().split()]
    return found


async def _send(proc: asyncio.subprocess.Process, message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(orjson.dumps(message) + b"\n")
    await proc.stdin.drain()


@pytest.mark.parametrize("durability", ["crash_safe", "sync"])
async def test_kill_9_under_load_keeps_the_ledger_valid_and_every_answer_receipted(
    tmp_path: Path, durability: str
) -> None:
    """Both levels that wait for the ledger before answering: a killed gateway loses no receipt
    of an answer it released (crash_safe: committed to the WAL; sync: also fsynced)."""
    config = config_for(tmp_path, checkpoint_every_entries=50, durability=durability)
    proc = await asyncio.create_subprocess_exec(
        *gateway_argv(config),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    answered: list[int] = []
    upstreams: list[int] = []
    try:
        await _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "kill-test", "version": "1"},
                },
            },
        )
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert orjson.loads(line)["id"] == "init"
        await _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})

        in_flight = 16
        sent = 0

        async def call(i: int) -> None:
            await _send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": f"call {i}"}},
                },
            )

        for sent in range(in_flight):
            await call(sent)
        while len(answered) < 400:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            message = orjson.loads(line)
            if isinstance(message.get("id"), int):
                assert "result" in message, message
                answered.append(message["id"])
                sent += 1
                await call(sent)  # keep the pipeline full: the kill lands mid-flight
        upstreams = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        # Answers already on the pipe were released by the gateway before it died: they count.
        rest = await asyncio.wait_for(proc.stdout.read(), 60)
        for raw in rest.splitlines():
            with contextlib.suppress(orjson.JSONDecodeError):
                message = orjson.loads(raw)
                if isinstance(message.get("id"), int) and "result" in message:
                    answered.append(message["id"])
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        for pid in upstreams:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    report = verify_ledger(ledger_paths(tmp_path))
    assert report.state is LedgerState.OK, report.to_dict()
    assert report.checkpoints_valid >= 1
    hashes = {r["input_hash"] for r in receipts(tmp_path) if r["method"] == "tools/call"}
    missing = [i for i in answered if canonical_sha256({"message": f"call {i}"}) not in hashes]
    assert missing == [], f"{len(missing)} answered calls have no receipt"
    assert len(answered) >= 400

    # What an operator runs after the crash: the CLI verifies the ledger as the gateway left it
    # and names the level; the next start signs the tail the kill left unsigned.
    state = str(tmp_path / "state")
    verified = await _mcpward("ledger", "verify", "--state-dir", state)
    assert verified[0] == 0, verified[1]
    assert f"durability: {durability} from seq 0" in verified[1]
    restarted = build_recorder(EvidenceSettings(durability=durability), tmp_path / "state")
    await restarted.close()
    after = verify_ledger(ledger_paths(tmp_path))
    assert (after.state, after.uncheckpointed) == (LedgerState.OK, 0), after.to_dict()
    assert after.entries == report.entries


async def _mcpward(*args: str) -> tuple[int, str]:
    """The real CLI in a subprocess: exit code and stdout."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpward.cli.main",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode()
