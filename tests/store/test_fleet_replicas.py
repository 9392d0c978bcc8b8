"""Fleet mode end to end: two `mcpward run` replicas (HTTP fronts, two ports) on one PostgreSQL
database. A drift seen through replica A is held on B too; one `mcpward pins accept ... --config F`
(run exactly as the hold printed it) and the next call passes on both within 1 s, no restart.
A token revoked with the CLI is refused by both replicas within 1 s."""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.store.fleet import (
    TOKEN,
    Replica,
    cli,
    held_data,
    replica_config,
    running,
    write_control,
)

pytestmark = pytest.mark.asyncio
HOLD_CODE = -32010


async def call(replica: Replica, token: str = TOKEN) -> tuple[bool, dict | None]:
    """(passed, -32010 data) of one transfer call through this replica, on a fresh session."""
    async with replica.client(token) as session:
        await session.list_tools()
        try:
            result = await session.call_tool("transfer", {"amount": 5, "memo": "fleet"})
        except MCPError as exc:
            if exc.error.code != HOLD_CODE:
                raise
            return False, held_data(exc)
    assert not result.is_error, result
    return True, None


async def initialize_status(replica: Replica) -> int:
    """The HTTP status of a bare `initialize` with the client's token (401 once revoked)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "fleet", "version": "1"}},
    }  # fmt: skip
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(replica.url, json=body, headers=headers)
    if response.status_code == 401:
        assert "token revoked" in response.headers.get("www-authenticate", "")
    return response.status_code


async def passes_within(replica: Replica, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        passed, _ = await call(replica)
        if passed or time.monotonic() >= deadline:
            return passed
        await asyncio.sleep(0.02)


async def test_drift_held_on_both_replicas_one_accept_releases_both(
    pg_dsn: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    control = tmp_path / "control.json"
    write_control(control, 0)
    a = replica_config(tmp_path, "a", keys, control)
    b = replica_config(tmp_path, "b", keys, control)
    # a fresh database: the replica refuses to start and names the command
    refused = cli(pg_dsn, "run", "--config", str(a.config), check=False)
    assert refused.returncode != 0
    assert f"mcpward store migrate --config {a.config}" in refused.stderr
    cli(pg_dsn, "store", "migrate", "--config", str(a.config))

    with running([a, b], pg_dsn):
        assert (await call(a))[0] and (await call(b))[0]  # first sight pinned, shared
        write_control(control, 1)  # the upstream drifts (each replica's own process)
        passed, data = await call(a)
        assert not passed and data is not None
        accept = data["accept"]
        assert f"--config {a.config}" in accept, accept
        passed, data_b = await call(b)
        assert not passed and data_b is not None and data_b["new_hash"] == data["new_hash"]
        holds = cli(pg_dsn, "holds", "--config", str(b.config), "--json")
        assert '"transfer"' in holds.stdout

        argv = shlex.split(accept)
        assert argv[0] == "mcpward"
        cli(pg_dsn, *argv[1:])  # once, exactly as printed
        assert await passes_within(a, 1.0), "replica A still holds 1 s after the accept"
        assert await passes_within(b, 1.0), "replica B still holds 1 s after the accept"
        left = json.loads(cli(pg_dsn, "holds", "--config", str(a.config), "--json").stdout)
        assert "transfer" not in {h["name"] for h in left}  # the prompt and resource still held
        assert {h["name"] for h in left} == {"greet", "res://ledger"}
        history = json.loads(
            cli(pg_dsn, "pins", "history", "ledger", "--config", str(b.config), "--json").stdout
        )
        transfer = [
            (h["action"], (h["source"].split() or [""])[0])
            for h in history
            if h["name"] == "transfer"
        ]
        # newest first; one "hold" although both replicas served held calls
        assert transfer == [("release", ""), ("pin", "accept"), ("hold", "drift"), ("pin", "tofu")]
        assert all(h["verified"] for h in history)


async def test_a_revoked_token_is_refused_by_every_replica_within_a_second(
    pg_dsn: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    control = tmp_path / "control.json"
    write_control(control, 0)
    a = replica_config(tmp_path, "a", keys, control)
    b = replica_config(tmp_path, "b", keys, control)
    cli(pg_dsn, "store", "migrate", "--config", str(a.config))
    with running([a, b], pg_dsn):
        assert (await call(a))[0] and (await call(b))[0]
        async with httpx.AsyncClient(timeout=30) as http:  # the store check of /readyz
            ready = await http.get(a.url.replace("/mcp", "/readyz"))
        assert (ready.status_code, ready.text) == (200, "ready")
        cli(pg_dsn, "token", "revoke", "--config", str(b.config), "fleet-client")
        for replica in (a, b):
            deadline = time.monotonic() + 1.0
            while (status := await initialize_status(replica)) == 200:
                assert time.monotonic() < deadline, f"{replica.name} still admits the token"
                await asyncio.sleep(0.02)
            assert status == 401
        listed = cli(pg_dsn, "token", "revoked", "--config", str(a.config))
        assert "fleet-client" in listed.stdout
