"""The HTTP front end to end: the mcp SDK client through mcpward to a real HTTP upstream (the
conformance fixture) in both eras; sessions bound to credentials; server->client requests routed
to the right client; the 2026-07-28 header ladder; no client credential ever reaches upstream."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, TextContent

from tests.http.gateway_harness import fixture_upstream, gateway_front, token_entry

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef01"
UPSTREAM_KEY = "upstream-key-for-fixture-only"
on_module_loop = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Setup:
    url: str
    headers_file: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def setup(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    directory = tmp_path_factory.mktemp("front")
    headers_file = directory / "upstream-headers.jsonl"
    os.environ["MCPWARD_TEST_UPSTREAM_KEY"] = UPSTREAM_KEY
    async with fixture_upstream(record_headers=headers_file) as upstream_url:
        upstream = {
            "id": "fx",
            "url": upstream_url,
            "allow_private": ["127.0.0.1"],
            "headers": {"X-Upstream-Key": {"env": "MCPWARD_TEST_UPSTREAM_KEY"}},
        }
        front = {"tokens": [token_entry(ALICE, "alice"), token_entry(BOB, "bob")]}
        async with gateway_front([upstream], directory / "state", front, guards=[]) as (_, url):
            yield Setup(url, headers_file)


def client(url: str, token: str, mode: str, **kwargs: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode, **kwargs)


@on_module_loop
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_list_and_call_with_progress(setup: Setup, mode: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with client(setup.url, ALICE, mode) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"test_simple_text", "test_sampling", "test_tool_with_progress"} <= names
        result = await session.call_tool("test_simple_text", {})
        assert result.content[0].text == "This is a simple text response for testing."  # type: ignore[union-attr]
        result = await session.call_tool(
            "test_tool_with_progress", {}, progress_callback=on_progress
        )
        assert not result.is_error
    assert seen == [0, 50, 100]


@on_module_loop
async def test_ping_is_answered_in_the_handshake_era_and_unknown_at_2026(setup: Setup) -> None:
    """As on the stdio front (docs/conformance.md): the gateway answers a handshake-era ping;
    at 2026-07-28 ping is removed (-32601; the header ladder case "removed method")."""
    async with client(setup.url, ALICE, "legacy") as session:
        await session.send_ping()
    async with client(setup.url, ALICE, "2026-07-28") as session:
        with pytest.raises(MCPError) as refused:
            await session.send_ping()
        assert refused.value.code == -32601


@on_module_loop
async def test_server_requests_reach_the_client_that_caused_them(setup: Setup) -> None:
    """Two clients sample concurrently; each sampling request goes back to its own client."""

    def sampler(label: str) -> Any:
        async def callback(context: Any, params: Any) -> CreateMessageResult:
            await asyncio.sleep(0.05)
            return CreateMessageResult(
                role="assistant", content=TextContent(type="text", text=label), model="test"
            )

        return callback

    async def run(token: str, label: str) -> str:
        async with client(setup.url, token, "legacy", sampling_callback=sampler(label)) as session:
            result = await session.call_tool("test_sampling", {"prompt": "who are you?"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    answers = await asyncio.gather(run(ALICE, "alice"), run(BOB, "bob"), run(ALICE, "alice-2"))
    assert answers == ["LLM response: alice", "LLM response: bob", "LLM response: alice-2"]


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
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _sse_json(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer: a JSON body (a quick answer) or an SSE stream."""
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


@on_module_loop
async def test_sessions_are_minted_and_bound_to_the_credential(setup: Setup) -> None:
    alice = {**HEADERS, "Authorization": f"Bearer {ALICE}"}
    bob = {**HEADERS, "Authorization": f"Bearer {BOB}"}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(setup.url, headers=alice, json=INIT)
        assert response.status_code == 200
        sid = response.headers["mcp-session-id"]
        assert all(0x21 <= ord(ch) <= 0x7E for ch in sid) and len(sid) >= 32
        version = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (
            await http.post(setup.url, headers={**alice, **version}, json=note)
        ).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        response = await http.post(setup.url, headers={**alice, **version}, json=listing)
        assert response.status_code == 200 and _sse_json(response.text)[-1]["result"]["tools"]
        # A quick answer with nothing before it is one JSON body, still naming the session.
        assert response.headers["content-type"] == "application/json"
        assert response.headers["mcp-session-id"] == sid
        # Another client's valid credential cannot use the session: it does not exist for it.
        response = await http.post(setup.url, headers={**bob, **version}, json=listing)
        assert response.status_code == 404
        # DELETE ends it; afterwards it is unknown (404) for its owner too.
        assert (await http.delete(setup.url, headers={**alice, **version})).status_code == 200
        response = await http.post(setup.url, headers={**alice, **version}, json=listing)
        assert response.status_code == 404
    # The upstream never saw the id we minted (it has its own session with us).
    records = [json.loads(line) for line in setup.headers_file.read_text().splitlines()]
    upstream_ids = {r["headers"].get("mcp-session-id") for r in records}
    assert sid not in upstream_ids


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def _modern(
    method: str, params: dict[str, Any] | None = None, request_id: int = 7
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": MODERN_META},
    }


@on_module_loop
@pytest.mark.parametrize(
    ("case", "headers", "body", "status", "code"),
    [
        ("ok", {"Mcp-Method": "tools/call", "Mcp-Name": "test_simple_text"}, None, 200, None),
        (
            "method mismatch",
            {"Mcp-Method": "tools/list", "Mcp-Name": "test_simple_text"},
            None,
            400,
            -32020,
        ),
        (
            "method case",
            {"Mcp-Method": "TOOLS/CALL", "Mcp-Name": "test_simple_text"},
            None,
            400,
            -32020,
        ),
        (
            "name mismatch",
            {"Mcp-Method": "tools/call", "Mcp-Name": "test_error_handling"},
            None,
            400,
            -32020,
        ),
        ("name missing", {"Mcp-Method": "tools/call"}, None, 400, -32020),
        ("method missing", {"Mcp-Name": "test_simple_text"}, None, 400, -32020),
        ("removed method", {"Mcp-Method": "ping"}, _modern("ping"), 404, -32601),
        (
            "no _meta",
            {"Mcp-Method": "tools/list"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            400,
            -32602,
        ),
    ],
)
async def test_modern_header_ladder(
    setup: Setup, case: str, headers: dict[str, str], body: Any, status: int, code: int | None
) -> None:
    request = body or _modern("tools/call", {"name": "test_simple_text", "arguments": {}})
    all_headers = {
        **HEADERS,
        "Authorization": f"Bearer {ALICE}",
        "MCP-Protocol-Version": "2026-07-28",
        **headers,
    }
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(setup.url, headers=all_headers, json=request)
    assert response.status_code == status, response.text
    answer = (
        response.json()
        if response.headers["content-type"].startswith("application/json")
        else _sse_json(response.text)[-1]
    )
    if code is None:
        assert answer["result"]["content"][0]["text"].startswith("This is a simple text")
        assert "mcp-session-id" not in response.headers
    else:
        assert answer["error"]["code"] == code


@on_module_loop
async def test_modern_get_and_delete_are_not_offered(setup: Setup) -> None:
    headers = {"Authorization": f"Bearer {ALICE}", "MCP-Protocol-Version": "2026-07-28"}
    async with httpx.AsyncClient(timeout=30) as http:
        for method in ("GET", "DELETE"):
            response = await http.request(method, setup.url, headers=headers)
            assert response.status_code == 405
            assert response.headers["allow"] == "POST"


@on_module_loop
async def test_client_credentials_never_reach_the_upstream(setup: Setup) -> None:
    """The fixture records every request's headers: the upstream's own configured header arrives,
    the clients' tokens and Authorization headers never do."""
    for mode in ("legacy", "2026-07-28"):
        async with client(setup.url, ALICE, mode) as session:
            await session.call_tool("test_simple_text", {})
    text = setup.headers_file.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) >= 6
    assert ALICE not in text and BOB not in text
    assert all("authorization" not in r["headers"] for r in records)
    assert all(r["headers"].get("x-upstream-key") == UPSTREAM_KEY for r in records)
    modern = [r for r in records if r["headers"].get("mcp-protocol-version") == "2026-07-28"]
    # Regenerated from the forwarded body: the upstream sees its own name for the tool.
    assert any(r["headers"].get("mcp-name") == "test_simple_text" for r in modern)


async def _first_listen_event(url: str, listen_id: str) -> dict[str, Any]:
    headers = {
        **HEADERS,
        "Authorization": f"Bearer {ALICE}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
    }
    body = {
        "jsonrpc": "2.0",
        "id": listen_id,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META},
    }
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("POST", url, headers=headers, json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                return dict(json.loads(line[5:]))
    raise AssertionError("the listen stream ended without an event")


@on_module_loop
async def test_concurrent_listens_each_get_their_own_subscription_id(setup: Setup) -> None:
    # Both listens share one pooled relay session and one upstream; the upstream tags its
    # notifications with the gateway's ids, and each client stream gets its own id back.
    first, second = await asyncio.gather(
        asyncio.wait_for(_first_listen_event(setup.url, "listen-a"), 20),
        asyncio.wait_for(_first_listen_event(setup.url, "listen-b"), 20),
    )
    for event, listen_id in ((first, "listen-a"), (second, "listen-b")):
        assert event["method"] == "notifications/subscriptions/acknowledged"
        assert event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id


@on_module_loop
async def test_concurrent_calls_in_one_session_get_their_own_server_requests(setup: Setup) -> None:
    """Two sampling calls in flight on one session to one upstream: each sampling request
    arrives on the stream of the call that caused it (the upstream's HTTP stream says which),
    and each answer goes back to the right call."""
    alice = {**HEADERS, "Authorization": f"Bearer {ALICE}"}
    init = {**INIT, "params": {**INIT["params"], "capabilities": {"sampling": {}}}}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(setup.url, headers=alice, json=init)
        session = {
            "MCP-Protocol-Version": "2025-11-25",
            "Mcp-Session-Id": response.headers["mcp-session-id"],
        }
        headers = {**alice, **session}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(setup.url, headers=headers, json=note)).status_code == 202

        async def call(request_id: int, label: str) -> str:
            body = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "test_sampling", "arguments": {"prompt": label}},
            }
            async with http.stream("POST", setup.url, headers=headers, json=body) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:") or not line[5:].strip():
                        continue
                    message = json.loads(line[5:])
                    if message.get("method") == "sampling/createMessage":
                        asked = message["params"]["messages"][0]["content"]["text"]
                        assert label in asked, (label, asked)  # our own call's request
                        answer = {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": {
                                "role": "assistant",
                                "content": {"type": "text", "text": label},
                                "model": "test",
                            },
                        }
                        reply = await http.post(setup.url, headers=headers, json=answer)
                        assert reply.status_code == 202
                    elif message.get("id") == request_id:
                        return str(message["result"]["content"][0]["text"])
            raise AssertionError("the call's stream ended without its answer")

        answers = await asyncio.wait_for(asyncio.gather(call(21, "first"), call(22, "second")), 30)
    assert answers == ["LLM response: first", "LLM response: second"]
