"""Issue 23, items 1 and 2 over HTTP: a real `mcpward run --http` process. A notification of the
wrong shape is dropped (202), a frame that is not strict JSON or nests too deep is refused (400
with a JSON-RPC error), a request of the wrong shape gets -32602 with its id; after each, `ping`
is answered and the process is alive. Never a 500, never a stream that does not deliver."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.http.gateway_harness import free_port, stop_process, wait_for_port
from tests.relay.conftest import ECHO
from tests.relay.test_hostile_client_frames import BIG, HOSTILE_NOTIFICATIONS, _deep

TOKEN = "hostile-frames-token-0123456789"


@dataclass
class Front:
    proc: asyncio.subprocess.Process
    client: httpx.AsyncClient
    url: str
    session_id: str = ""

    def headers(self) -> dict[str, str]:
        headers = {
            "authorization": f"Bearer {TOKEN}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": "2025-11-25",
        }
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        return headers

    async def post(self, body: bytes) -> httpx.Response:
        return await self.client.post(self.url, content=body, headers=self.headers())

    async def ping(self, request_id: str) -> dict[str, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
        return answer(await self.post(body))


def answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, whether plain JSON or an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message: dict[str, Any] = json.loads(line[5:])
                if "method" not in message:
                    return message
        raise AssertionError(f"no answer in the stream: {response.text[:500]}")
    loaded: dict[str, Any] = response.json()
    return loaded


@pytest_asyncio.fixture
async def front(tmp_path: Path) -> AsyncIterator[Front]:
    port = free_port()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpward.cli.main",
        "run",
        "--http",
        f"127.0.0.1:{port}",
        "--token-file",
        str(token_file),
        "--env",
        "ECHO_NAME=a",
        "--",
        sys.executable,
        ECHO,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env=dict(os.environ),
    )
    try:
        await wait_for_port(port, proc, timeout=60)
        async with httpx.AsyncClient(timeout=30) as client:
            served = Front(proc, client, f"http://127.0.0.1:{port}/mcp")
            opening = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "hostile", "version": "1"},
                },
            }
            response = await served.post(json.dumps(opening).encode())
            assert "result" in answer(response), response.text
            served.session_id = response.headers["mcp-session-id"]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await served.post(json.dumps(initialized).encode())).status_code == 202
            yield served
    finally:
        await stop_process(proc)


# what each hostile notification gets: dropped (202), or refused as not strict JSON (400 + code)
EXPECTED = {
    "forwarded-lone-surrogate": (400, -32700),
    "forwarded-lone-surrogate-key": (400, -32700),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_NOTIFICATIONS))
async def test_a_hostile_notification_never_stops_the_http_gateway(front: Front, name: str) -> None:
    response = await front.post(HOSTILE_NOTIFICATIONS[name].encode())
    status, code = EXPECTED.get(name, (202, None))
    assert response.status_code == status, (response.status_code, response.text[:300])
    if code is not None:
        assert response.json()["error"]["code"] == code
    assert (await front.ping("after-" + name))["result"] == {}
    assert front.proc.returncode is None


async def test_a_request_whose_id_is_a_lone_surrogate_gets_a_parse_error(front: Front) -> None:
    body = b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping","params":{"n":' + BIG.encode() + b"}}"
    response = await asyncio.wait_for(front.post(body), 30)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700 and response.json()["id"] is None
    assert (await front.ping("after"))["result"] == {}


async def test_a_request_of_the_wrong_shape_gets_invalid_params_with_its_id(front: Front) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": "bad",
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": {"progressToken": [1]}},
    }
    response = await front.post(json.dumps(request).encode())
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602 and response.json()["id"] == "bad"
    deep = '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' + _deep(300) + "}}"
    response = await front.post(deep.encode())
    assert response.status_code == 400 and response.json()["error"]["code"] == -32600
    assert response.json()["id"] == 7
    assert (await front.ping("after"))["result"] == {}
