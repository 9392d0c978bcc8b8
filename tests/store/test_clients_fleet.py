"""Client records across a fleet, end to end: two gateway replicas in this process (HTTP fronts,
each its own pool and listener, one PostgreSQL database), a real MCP client on each. One
`mcpward clients set-ceiling ... --config F`, and within a second both replicas refuse the
destructive tool the client could call before; the session opened under the old record is gone
(404: the client starts a new one)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.config.http_front import HttpFront
from mcpward.config.loader import load_config
from mcpward.fronts.http.server import running_front
from mcpward.relay.gateway import Gateway
from tests.store.fleet import TOKEN, Replica, replica_config
from tests.store.pg import DSN_ENV

pytestmark = pytest.mark.asyncio


def write_destructive_tool(control: Path) -> None:
    control.write_text(json.dumps({"version": 0, "annotations": "write"}), encoding="utf-8")


def own_pool(replica: Replica, pool_max: int) -> Replica:
    """Pools are shared per settings within a process: a size of its own makes the replica's."""
    data = yaml.safe_load(replica.config.read_text(encoding="utf-8"))
    data["store"]["pool"] = {"min": 1, "max": pool_max}
    replica.config.write_text(yaml.safe_dump(data), encoding="utf-8")
    return replica


@contextlib.asynccontextmanager
async def serving(replica: Replica) -> AsyncIterator[None]:
    loaded = load_config(replica.config)
    assert isinstance(loaded.config.front, HttpFront)
    gateway = await Gateway.start(loaded)
    try:
        async with running_front(gateway, loaded.config.front):
            yield
    finally:
        await gateway.close()


def cli(dsn: str, *args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={DSN_ENV: dsn})
    assert result.exit_code == 0, result.output
    return result.output


async def outcome(replica: Replica) -> str:
    """`passed`; `ceiling` when the access guard refused the call for the client's ceiling;
    `ended` when the record changed mid-session (the session is gone: HTTP 404)."""
    async with replica.client() as session:
        try:
            await session.list_tools()
            result = await session.call_tool("transfer", {"amount": 5, "memo": "fleet"})
        except MCPError as exc:
            if "unknown or expired session" in exc.error.message:
                return "ended"
            assert "consent ceiling" in exc.error.message, exc.error
            return "ceiling"
    assert not result.is_error, result
    return "passed"


async def becomes(replica: Replica, want: str, since: float) -> None:
    """A call started within 1 s of `since` gets `want` (calls themselves may take longer)."""
    while True:
        started = time.monotonic()
        if await outcome(replica) == want:
            return
        assert started - since < 1.0, f"{replica.name} still not {want} after 1 s"


async def open_session(replica: Replica, http: httpx.AsyncClient) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "fleet", "version": "1"}},
    }  # fmt: skip
    response = await http.post(replica.url, json=body)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


async def session_status(replica: Replica, http: httpx.AsyncClient, session_id: str) -> int:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}
    return (await http.post(replica.url, json=body, headers=headers)).status_code


async def test_a_lowered_ceiling_holds_on_every_replica_within_a_second(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    keys = tmp_path / "keys"
    control = tmp_path / "control.json"
    write_destructive_tool(control)
    a = own_pool(replica_config(tmp_path, "a", keys, control), 3)
    b = own_pool(replica_config(tmp_path, "b", keys, control), 5)
    cli(pg_dsn, "store", "migrate", "--config", str(a.config))
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
    }
    async with serving(a), serving(b):
        assert await outcome(a) == "passed" and await outcome(b) == "passed"
        async with httpx.AsyncClient(timeout=30, headers=headers) as http:
            old = await open_session(a, http)
            assert await session_status(a, http, old) == 200

            cli(pg_dsn, "clients", "set-ceiling", "fleet-client", "read_only", "--config",
                str(b.config))  # fmt: skip
            changed = time.monotonic()
            for replica in (a, b):
                await becomes(replica, "ceiling", changed)
            assert await session_status(a, http, old) == 404  # opened under the old record
