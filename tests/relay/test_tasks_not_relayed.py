"""Tasks (2025-11-25 experimental, an extension in 2026-07-28) are not relayed: a task's deferred
result would reach the client through `tasks/result`, past the result guards and without a receipt.

The gateway advertises no task support either way, drops a request's task augmentation (so the
upstream answers in the same request, through every guard) and refuses `tasks/*`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcpward.protocol import errors
from mcpward.relay.unrelayed import with_tasks_removed, without_tasks
from mcpward.testing.rawpeer import RawPeer
from tests.relay.conftest import GatewayFactory, echo_upstream
from tests.support.gateway import gateway_argv, write_gateway_config

SECRETS_GUARD = {"kind": "secrets", "runs_on": ["tool_result"]}
CLIENT_CAPS = {"sampling": {}, "tasks": {"requests": {"sampling": {"createMessage": {}}}}}
TASK_METHODS = ["tasks/result", "tasks/get", "tasks/list", "tasks/cancel"]


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _tasks_upstream(upstream_id: str, log: Path) -> dict[str, Any]:
    return echo_upstream(upstream_id, ECHO_TASKS="1", ECHO_TASKS_LOG=str(log))


@pytest.mark.parametrize("aggregated", [False, True], ids=["one-upstream", "aggregated"])
async def test_no_task_reaches_either_side(
    gateway: GatewayFactory, tmp_path: Path, aggregated: bool
) -> None:
    log = tmp_path / "tasks.jsonl"
    upstreams = [_tasks_upstream("a", log)]
    if aggregated:
        upstreams.append(_tasks_upstream("b", tmp_path / "tasks-b.jsonl"))
    async with gateway(upstreams, guards=[SECRETS_GUARD], initialize=False) as peer:
        init = await peer.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": CLIENT_CAPS,
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        await peer.notify("notifications/initialized")
        assert "tasks" not in init["capabilities"]

        echo = "a__echo" if aggregated else "echo"
        result = await peer.call(
            "tools/call", {"name": echo, "arguments": {"x": 1}, "task": {"ttl": 60000}}
        )
        received = json.loads(result["content"][0]["text"])
        assert "task" not in received and received["arguments"] == {"x": 1}

        for method in TASK_METHODS:
            answer = await peer.request(method, {"taskId": "task-1"})
            assert answer["error"]["code"] == errors.METHOD_NOT_FOUND, method
            assert "tasks are not relayed" in answer["error"]["message"]

    sent = _log(log)
    initialize = [m for m in sent if m["method"] == "initialize"]
    assert initialize and all("tasks" not in m["params"]["capabilities"] for m in initialize)
    assert initialize[0]["params"]["capabilities"]["sampling"] == {}
    assert not [m for m in sent if m["method"] != "initialize"], "a task request was relayed"


async def test_a_tasks_result_secret_never_reaches_the_client(
    gateway: GatewayFactory, tmp_path: Path
) -> None:
    """The attack the policy closes: the fixture hands a credential back via tasks/result."""
    from tests.fixtures import echo_upstream as fixture

    async with gateway([_tasks_upstream("a", tmp_path / "log.jsonl")], [SECRETS_GUARD]) as peer:
        answer = await peer.request("tasks/result", {"taskId": "task-1"})
    assert "result" not in answer
    assert fixture.TASK_SECRET not in json.dumps(answer)


async def test_server_everything_task_tool_is_answered_without_a_task(
    server_everything: list[str], tmp_path: Path
) -> None:
    """A real server with task support (server-everything's `simulate-research-query` requires a
    task): through the gateway no task capability is offered and no task is created."""
    upstream = {"id": "everything", "command": server_everything[0], "args": server_everything[1:]}
    config = write_gateway_config(tmp_path, [upstream], guards=[])
    peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
    try:
        init = await peer.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": CLIENT_CAPS,
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        await peer.notify("notifications/initialized")
        assert "tasks" not in init["capabilities"]
        tools = await peer.call("tools/list", {})
        assert any(t["name"] == "simulate-research-query" for t in tools["tools"])
        answer = await peer.request(
            "tools/call",
            {
                "name": "simulate-research-query",
                "arguments": {"topic": "gateways"},
                "task": {"ttl": 60000},
            },
        )
        # never a CreateTaskResult: the upstream saw a plain call (which it may refuse)
        assert "task" not in answer.get("result", {})
        listed = await peer.request("tasks/list", {})
        assert listed["error"]["code"] == errors.METHOD_NOT_FOUND
    finally:
        await peer.close()


def test_capabilities_lose_only_their_task_support() -> None:
    plain = {"tools": {"listChanged": True}}
    assert without_tasks(plain) is plain  # nothing copied on the common path
    assert without_tasks({**plain, "tasks": {"list": {}}}) == plain
    modern = {"extensions": {"io.modelcontextprotocol/tasks": {}, "vendor/x": {"a": 1}}}
    assert without_tasks(modern) == {"extensions": {"vendor/x": {"a": 1}}}
    discover = {"supportedVersions": ["2026-07-28"], "capabilities": modern}
    assert with_tasks_removed(discover)["capabilities"] == {"extensions": {"vendor/x": {"a": 1}}}
    assert with_tasks_removed({"capabilities": plain})["capabilities"] is plain


async def test_the_http_front_relays_no_task(tmp_path: Path) -> None:
    """The same over Streamable HTTP (handshake-era session): one relay, so one policy."""
    import httpx

    from tests.http.gateway_harness import gateway_front, token_entry

    token = "tasks-test-token-0123456789abcdef"
    log = tmp_path / "tasks.jsonl"
    front = {"tokens": [token_entry(token, "alice")]}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token}",
    }

    def answer(response: httpx.Response) -> dict[str, Any]:
        text = response.text
        if text.lstrip().startswith("{"):
            return dict(json.loads(text))
        data = [line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:]]
        return dict(json.loads(data[-1]))

    upstream = _tasks_upstream("a", log)
    async with (
        gateway_front([upstream], tmp_path / "state", front, guards=[SECRETS_GUARD]) as (_, url),
        httpx.AsyncClient(timeout=30) as http,
    ):
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": CLIENT_CAPS,
            "clientInfo": {"name": "t", "version": "1"},
        }
        response = await http.post(
            url,
            headers=headers,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        )
        assert "tasks" not in answer(response)["result"]["capabilities"]
        session = {
            **headers,
            "Mcp-Session-Id": response.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        await http.post(
            url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        call = {"name": "echo", "arguments": {"x": 2}, "task": {"ttl": 1000}}
        response = await http.post(
            url,
            headers=session,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        )
        received = json.loads(answer(response)["result"]["content"][0]["text"])
        assert "task" not in received
        response = await http.post(
            url,
            headers=session,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/result",
                "params": {"taskId": "task-1"},
            },
        )
        assert answer(response)["error"]["code"] == errors.METHOD_NOT_FOUND
    assert [m["method"] for m in _log(log)] == ["initialize"]
