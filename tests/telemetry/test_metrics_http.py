"""/metrics on the HTTP front: only with the admin token (a client token or none: 401), 404
without an admin credential; the MCP endpoint refuses the admin token; counts after known calls."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from mcpward.config.loader import parse_config
from mcpward.demo.server import write_control
from mcpward.fronts.http.server import running_front
from mcpward.relay.gateway import Gateway
from tests.http.gateway_harness import token_entry
from tests.support.gateway import demo_upstream, tool_filter_guard
from tests.telemetry.scrape import Scrape

ADMIN = "admin-" + "a" * 40
CLIENT = "client-" + "c" * 40
GUARDS = [
    {"id": "pin-gate", "kind": "rug_pull", "runs_on": ["tools_list", "tool_invoke"]},
    {**tool_filter_guard("delete_*"), "id": "no-delete"},
]
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextlib.asynccontextmanager
async def http_gateway(tmp_path: Path, admin: bool, control: Path) -> AsyncIterator[str]:
    """The real gateway with an HTTP front on an ephemeral loopback port; yields its MCP URL."""
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    front: dict[str, Any] = {"kind": "http", "port": 0, "tokens": [token_entry(CLIENT, "alice")]}
    if admin:
        front["admin_token"] = {"file": str(token_file)}
    data = {
        "upstreams": [demo_upstream(control=control)],
        "state_dir": str(tmp_path / "state"),
        "guards": {"replace_defaults": True, "list": GUARDS},
        "front": front,
    }
    loaded = parse_config(data, "test")
    gateway = await Gateway.start(loaded)
    try:
        async with running_front(gateway, loaded.config.front) as url:  # type: ignore[arg-type]
            yield url
    finally:
        await gateway.close()


class McpOverHttp:
    """A minimal handshake-era client: one session, JSON or SSE answers."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.headers = {**ACCEPT, "authorization": f"Bearer {CLIENT}"}
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        response = await self.http.post(self.url, json=body, headers=self.headers)
        assert response.status_code == 200, response.text
        if "mcp-session-id" in response.headers:
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        if response.headers["content-type"].startswith("text/event-stream"):
            datas = [ln[5:].strip() for ln in response.text.splitlines() if ln.startswith("data:")]
            replies = [json.loads(d) for d in datas if d]
            return next(r for r in replies if r.get("id") == self.next_id)
        return dict(response.json())

    async def open(self) -> None:
        await self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, json=note, headers=self.headers)


async def test_metrics_need_the_admin_token_and_count_calls(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    write_control(control, drift=False, notify=False)
    async with http_gateway(tmp_path, True, control) as url, httpx.AsyncClient(timeout=30) as http:
        metrics = url.rsplit("/mcp", 1)[0] + "/metrics"
        mcp = McpOverHttp(http, url)
        await mcp.open()
        await mcp.request("tools/list", {})
        for word in ("one", "two"):
            reply = await mcp.request(
                "tools/call", {"name": "echo", "arguments": {"message": word}}
            )
            assert "result" in reply and not reply["result"].get("isError")
        denied = await mcp.request(
            "tools/call", {"name": "delete_file", "arguments": {"path": "x"}}
        )
        assert denied["error"]["code"] == -32013
        write_control(control, drift=True, notify=False)
        await mcp.request("tools/list", {})
        held = await mcp.request(
            "tools/call", {"name": "echo", "arguments": {"message": "m", "token": "sekrit-value"}}
        )
        assert held["error"]["code"] == -32010

        for headers in ({}, {"authorization": f"Bearer {CLIENT}"}, {"authorization": "Bearer x"}):
            refused = await http.get(metrics, headers=headers)
            assert refused.status_code == 401 and "sekrit" not in refused.text
            assert refused.headers["www-authenticate"].startswith("Bearer")
        posted = await http.post(metrics, headers={"authorization": f"Bearer {ADMIN}"})
        assert posted.status_code == 405
        # the admin token is no client token: the MCP endpoint refuses it
        as_admin = {**ACCEPT, "authorization": f"Bearer {ADMIN}"}
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert (await http.post(url, json=ping, headers=as_admin)).status_code == 401

        response = await http.get(metrics, headers={"authorization": f"Bearer {ADMIN}"})
        assert response.status_code == 200
        got = Scrape(response.text)
    call = {"upstream": "demo", "method": "tools/call"}
    assert got.value("mcpward_calls_total", **call, decision="allow") == 2
    assert got.value("mcpward_calls_total", **call, decision="deny") == 1
    assert got.value("mcpward_calls_total", **call, decision="hold") == 1
    assert got.value("mcpward_guard_stops_total", guard="no-delete", code="tool_not_allowed") == 1
    assert got.value("mcpward_guard_stops_total", guard="pin-gate", code="contract_drift") == 1
    assert got.value("mcpward_open_holds") == 1
    assert got.value("mcpward_ledger_appends_total") == got.value("mcpward_calls_total")
    assert got.value("mcpward_upstream_connections", upstream="demo") == 1
    assert "sekrit-value" not in got.text


async def test_without_an_admin_credential_there_is_no_metrics_endpoint(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    write_control(control, drift=False, notify=False)
    async with http_gateway(tmp_path, False, control) as url, httpx.AsyncClient(timeout=30) as http:
        metrics = url.rsplit("/mcp", 1)[0] + "/metrics"
        for token in (ADMIN, CLIENT):
            response = await http.get(metrics, headers={"authorization": f"Bearer {token}"})
            assert response.status_code == 404
