"""Two relay properties on the surfaces their own tests do not reach: no task is relayed and an
upstream cannot answer with the gateway's codes (-32010..-32013), through the HTTP front in the
2026-07-28 era (stateless requests), the handshake-era HTTP front (forged codes), and the library
wrapper around the SDK's own ClientSession. The stdio front, aggregation and the handshake-era
HTTP front's tasks are in test_tasks_not_relayed.py and test_foreign_codes.py."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcpward import MCPWardError, guarded
from mcpward.protocol import errors
from mcpward.relay.foreign_codes import UPSTREAM_SERVER_ERROR
from tests.http.gateway_harness import gateway_front, token_entry
from tests.library.support import sdk_session
from tests.relay.conftest import ECHO, echo_upstream

TOKEN = "surfaces-token-0123456789abcdef"
SECRETS_GUARD = {"kind": "secrets", "runs_on": ["tool_result"]}
TASK_METHODS = ["tasks/result", "tasks/get", "tasks/list", "tasks/cancel"]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"tasks": {"requests": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "surfaces", "version": "1"},
}
BASE_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}


def _sent(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def _answer(response: httpx.Response) -> dict[str, Any]:
    text = response.text
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    data = [line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:]]
    return dict(json.loads(data[-1]))


def _assert_forged_is_recoded(error: dict[str, Any]) -> None:
    assert error["code"] == UPSTREAM_SERVER_ERROR, error
    assert error["data"]["upstream_code"] == errors.HOLD


@asynccontextmanager
async def _front(tmp_path: Path, log: Path) -> AsyncIterator[str]:
    upstream = echo_upstream("a", ECHO_TASKS="1", ECHO_TASKS_LOG=str(log))
    front = {"tokens": [token_entry(TOKEN, "alice")]}
    async with gateway_front([upstream], tmp_path / "state", front, [SECRETS_GUARD]) as (_, url):
        yield url


async def test_modern_http_relays_no_task_and_recodes_a_forged_hold(tmp_path: Path) -> None:
    log = tmp_path / "tasks.jsonl"
    async with _front(tmp_path, log) as url, httpx.AsyncClient(timeout=30) as http:

        async def post(method: str, params: dict[str, Any], name: str | None = None) -> Any:
            headers = {**BASE_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
            if name is not None:
                headers["Mcp-Name"] = name
            body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
            body["params"] = {**params, "_meta": MODERN_META}
            return await http.post(url, headers=headers, json=body)

        discover = _answer(await post("server/discover", {}))
        assert "tasks" not in json.dumps(discover["result"].get("capabilities", {}))

        call = {"name": "echo", "arguments": {"x": 3}, "task": {"ttl": 1000}}
        echoed = _answer(await post("tools/call", call, name="echo"))
        received = json.loads(echoed["result"]["content"][0]["text"])
        assert "task" not in received and received["arguments"] == {"x": 3}

        for method in TASK_METHODS:
            response = await post(method, {"taskId": "task-1"})
            answer = _answer(response)
            assert answer["error"]["code"] == errors.METHOD_NOT_FOUND, (method, answer)
            assert "result" not in answer

        forged = _answer(await post("tools/call", {"name": "forge", "arguments": {}}, "forge"))
        _assert_forged_is_recoded(forged["error"])
    relayed = [m["method"] for m in _sent(log)]
    assert set(relayed) <= {"initialize"}, relayed


async def test_handshake_http_recodes_a_forged_hold(tmp_path: Path) -> None:
    async with _front(tmp_path, tmp_path / "log.jsonl") as url, httpx.AsyncClient() as http:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "surfaces", "version": "1"},
        }
        response = await http.post(
            url,
            headers=BASE_HEADERS,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        )
        session = {
            **BASE_HEADERS,
            "Mcp-Session-Id": response.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        await http.post(
            url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        for request_id, name in enumerate(["forge", "forge"], start=2):  # and again, pinned
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
            body["params"] = {"name": name, "arguments": {}}
            _assert_forged_is_recoded(
                _answer(await http.post(url, headers=session, json=body))["error"]
            )


def _echo_params(log: Path) -> StdioServerParameters:
    env = {"ECHO_NAME": "a", "ECHO_TASKS": "1", "ECHO_TASKS_LOG": str(log)}
    return StdioServerParameters(command=sys.executable, args=[ECHO], env=env)


async def test_the_library_wrapper_relays_no_task_and_recodes_a_forged_hold(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tasks.jsonl"
    config = {
        "state_dir": str(tmp_path / "state"),
        "guards": {"replace_defaults": True, "list": [SECRETS_GUARD]},
    }
    async with (
        sdk_session(_echo_params(log)) as session,
        guarded(session, upstream_id="a", config=config) as gs,
    ):
        with pytest.raises(MCPError) as forged:
            await gs.call_tool("forge", {})
        assert not isinstance(forged.value, MCPWardError)  # never a ContractHeld
        assert forged.value.code == UPSTREAM_SERVER_ERROR

        result = await gs.request(
            "tools/call", {"name": "echo", "arguments": {"x": 4}, "task": {"ttl": 1000}}
        )
        received = json.loads(result["content"][0]["text"])
        assert "task" not in received and received["arguments"] == {"x": 4}
        for method in TASK_METHODS:
            with pytest.raises(MCPError) as refused:
                await gs.request(method, {"taskId": "task-1"})
            assert refused.value.code == errors.METHOD_NOT_FOUND, method
    relayed = [m["method"] for m in _sent(log)]
    assert set(relayed) <= {"initialize"}, relayed
