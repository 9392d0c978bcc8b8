"""Upstream processes behind the HTTP front: caps refused with 503 + Retry-After, warm spares
handed to new sessions, idle reaping, per-identity sharing, unknown sessions, no orphans."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcpward.relay.gateway import Gateway
from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.paths import REPO_ROOT

ECHO = str(REPO_ROOT / "tests" / "fixtures" / "echo_upstream.py")
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef01"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def echo(pid_log: Path, **processes: Any) -> dict[str, Any]:
    return {
        "id": "echo",
        "command": sys.executable,
        "args": [ECHO],
        "env": {"ECHO_PID_LOG": str(pid_log), "ECHO_TOOLS": "echo,pid,notify,ask"},
        "processes": processes,
    }


def started(pid_log: Path) -> list[int]:
    if not pid_log.exists():
        return []
    return [int(line) for line in pid_log.read_text().split()]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


async def eventually(check: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)


@asynccontextmanager
async def front(tmp_path: Path, upstream: dict[str, Any]) -> AsyncIterator[tuple[Gateway, str]]:
    tokens = {"tokens": [token_entry(ALICE, "alice"), token_entry(BOB, "bob")]}
    async with gateway_front([upstream], tmp_path / "state", tokens, guards=[]) as pair:
        yield pair


def client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


async def open_raw(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    return await http.post(url, headers={**HEADERS, "Authorization": f"Bearer {token}"}, json=INIT)


def session_pids(gateway: Gateway) -> set[int]:
    return {
        pid
        for session in gateway.sessions
        for link in session.links.values()
        if (pid := getattr(link.connection, "pid", None)) is not None
    }


@pytest.mark.asyncio
async def test_a_reached_cap_is_refused_with_503_and_retry_after(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    upstream = echo(pid_log, max_processes=2, warm_spares=0)
    async with front(tmp_path, upstream) as (gateway, url), httpx.AsyncClient(timeout=30) as http:
        for _ in range(2):
            assert (await open_raw(http, url, ALICE)).status_code == 200
        refused = await open_raw(http, url, ALICE)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "5"
        error = refused.json()["error"]
        assert error["code"] == -32011 and error["data"] == {"reason": "capacity"}
        assert len(started(pid_log)) == 2 and gateway.processes.counts() == {"echo": 2}
        # a session that ends gives its process back: the next one is served
        await gateway.close_session(next(iter(gateway.sessions)))
        assert gateway.processes.counts() == {"echo": 1}
        assert (await open_raw(http, url, BOB)).status_code == 200


@pytest.mark.asyncio
async def test_the_total_cap_holds_across_upstreams(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    upstream = echo(pid_log, warm_spares=0)
    async with front(tmp_path, upstream) as (gateway, url), httpx.AsyncClient(timeout=30) as http:
        gateway.settings.max_processes = 1  # the pool reads the gateway-wide cap live
        assert (await open_raw(http, url, ALICE)).status_code == 200
        assert (await open_raw(http, url, BOB)).status_code == 503


@pytest.mark.asyncio
async def test_a_new_session_gets_a_warm_spare(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    async with front(tmp_path, echo(pid_log, warm_spares=1)) as (gateway, url):
        await eventually(lambda: gateway.processes.ready() and len(started(pid_log)) == 1)
        spare = started(pid_log)[0]
        async with client(url, ALICE) as session:
            result = await session.call_tool("pid", {})
            assert result.content[0].text == str(spare)  # type: ignore[union-attr]
            # a replacement spare is started for the next session
            await eventually(lambda: len(started(pid_log)) == 2)
        replacement = started(pid_log)[1]
        async with client(url, BOB) as session:
            result = await session.call_tool("pid", {})
            assert result.content[0].text == str(replacement)  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_idle_spares_and_idle_shared_processes_are_reaped(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    async with front(tmp_path, echo(pid_log, warm_spares=1, idle_timeout_s=0.5)) as (gw, _):
        await eventually(lambda: len(started(pid_log)) == 1)
        spare = started(pid_log)[0]
        await eventually(lambda: gw.processes.counts() == {"echo": 0} and not alive(spare))
    shared_log = tmp_path / "shared-pids"
    upstream = echo(shared_log, sharing="identity", idle_timeout_s=0.5)
    async with front(tmp_path, upstream) as (gw, url):
        async with client(url, ALICE) as session:
            await session.call_tool("echo", {})
            assert gw.processes.counts() == {"echo": 1}
        (pid,) = started(shared_log)
        await eventually(lambda: gw.processes.counts() == {"echo": 0} and not alive(pid))


@pytest.mark.asyncio
async def test_identity_sharing_keeps_identities_apart(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    upstream = echo(pid_log, sharing="identity")
    async with front(tmp_path, upstream) as (_, url):

        async def pid_and_echo(token: str, marker: str) -> tuple[str, str]:
            async with client(url, token) as session:
                pid = await session.call_tool("pid", {})
                said = await session.call_tool("echo", {"marker": marker})
                return pid.content[0].text, said.content[0].text  # type: ignore[union-attr]

        results = await asyncio.gather(
            pid_and_echo(ALICE, "a1"), pid_and_echo(ALICE, "a2"), pid_and_echo(BOB, "b1")
        )
        (a1_pid, a1), (a2_pid, a2), (b1_pid, b1) = results
        assert a1_pid == a2_pid != b1_pid  # one process per identity, never shared across
        assert sorted(started(pid_log)) == sorted([int(a1_pid), int(b1_pid)])
        # every answer reached the session that asked (ids remapped per session)
        for marker, said in (("a1", a1), ("a2", a2), ("b1", b1)):
            assert json.loads(said)["arguments"] == {"marker": marker}


@pytest.mark.asyncio
async def test_shared_policy_serves_every_stateless_client_from_one_process(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    async with front(tmp_path, echo(pid_log, sharing="shared")) as (_, url):

        async def stateless_pid(token: str) -> str:
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            }
            body = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "pid", "arguments": {}, "_meta": meta},
            }
            headers = {
                **HEADERS,
                "Authorization": f"Bearer {token}",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "pid",
            }
            async with httpx.AsyncClient(timeout=30) as http:
                response = await http.post(url, headers=headers, json=body)
            assert response.status_code == 200, response.text
            return str(response.json()["result"]["content"][0]["text"])

        async def handshake_pid(token: str) -> str:
            async with client(url, token) as session:
                result = await session.call_tool("pid", {})
                return str(result.content[0].text)  # type: ignore[union-attr]

        alice, bob = await asyncio.gather(stateless_pid(ALICE), stateless_pid(BOB))
        assert alice == bob  # stateless requests carry their own _meta: one process serves both
        handshake = await handshake_pid(ALICE)
        assert handshake != alice  # a handshake-era session shares only within its identity
        assert len(started(pid_log)) == 2


@pytest.mark.asyncio
async def test_an_unknown_session_id_is_404(tmp_path: Path) -> None:
    async with front(tmp_path, echo(tmp_path / "pids", warm_spares=0)) as (_, url):
        headers = {**HEADERS, "Authorization": f"Bearer {ALICE}", "Mcp-Session-Id": "nope" * 8}
        headers["MCP-Protocol-Version"] = "2025-11-25"
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(url, headers=headers, json=ping)
        assert response.status_code == 404


@pytest.mark.asyncio
async def test_shutdown_with_many_sessions_leaves_no_orphan(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    async with front(tmp_path, echo(pid_log, warm_spares=2)) as (gateway, url):
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await asyncio.gather(*(open_raw(http, url, ALICE) for _ in range(12)))
        assert all(r.status_code == 200 for r in opened)
        assert len(session_pids(gateway)) == 12
    pids = started(pid_log)
    assert len(pids) >= 12
    await eventually(lambda: not any(alive(pid) for pid in pids), timeout=5)
