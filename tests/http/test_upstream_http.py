"""The Streamable HTTP upstream connector against a scripted loopback server: secrets from env
and files, era headers regenerated from the body, sessions, failures, the egress filter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpward.config.upstreams import HttpUpstream
from mcpward.protocol.errors import UpstreamFailure
from mcpward.upstreams.base import UpstreamUnavailable
from mcpward.upstreams.http import HttpUpstreamConnection, endpoint_identity
from tests.http.http_asgi_server import serve_asgi

X_HEADER_TOOL = {
    "name": "regional",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    },
}


class ScriptedUpstream:
    """Answers by method; records each request's headers and body."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.expire_session = False
        self.big_answer = False

    async def endpoint(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        method = body.get("method")
        if "id" not in body:
            return Response(status_code=202)
        if self.expire_session and method != "initialize":
            return Response(status_code=404)
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
            return JSONResponse(
                {"jsonrpc": "2.0", "id": body["id"], "result": result},
                headers={"Mcp-Session-Id": "up-1"},
            )
        if method == "tools/list":
            return JSONResponse(
                {"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [X_HEADER_TOOL]}}
            )
        if method == "explode":
            return Response("boom", status_code=500)
        if self.big_answer:
            return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {"pad": "x" * 5000}})
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {}})


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[ScriptedUpstream, int]]:
    scripted = ScriptedUpstream()
    app = Starlette(routes=[Route("/mcp", scripted.endpoint, methods=["POST", "GET", "DELETE"])])
    async with serve_asgi(app) as port:
        yield scripted, port


def connection(port: int, max_frame: int = 1 << 20, **spec: Any) -> HttpUpstreamConnection:
    spec.setdefault("allow_private", ["127.0.0.1"])
    return HttpUpstreamConnection(
        HttpUpstream(id="up", url=f"http://127.0.0.1:{port}/mcp", **spec), max_frame
    )


async def exchange(conn: HttpUpstreamConnection, message: dict[str, Any]) -> dict[str, Any]:
    await conn.send(message)
    return await asyncio.wait_for(conn.receive(), 10)


def request(rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        out["params"] = params
    return out


async def test_secrets_from_env_and_file_and_handshake_headers(
    upstream: tuple[ScriptedUpstream, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted, port = upstream
    monkeypatch.setenv("UPSTREAM_API_KEY", "env-secret")
    key_file = tmp_path / "key"
    key_file.write_text("file-secret\n")
    conn = connection(
        port,
        headers={
            "X-Api-Key": {"env": "UPSTREAM_API_KEY"},
            "Authorization": {"file": str(key_file), "prefix": "Bearer "},
        },
    )
    await conn.start()
    try:
        init = await exchange(conn, request(1, "initialize", {"protocolVersion": "2025-11-25"}))
        assert init["result"]["protocolVersion"] == "2025-11-25"
        await exchange(conn, request(2, "tools/list"))
        first, second = scripted.requests
        assert first[0]["x-api-key"] == "env-secret"
        assert first[0]["authorization"] == "Bearer file-secret"
        assert "mcp-session-id" not in first[0] and "mcp-protocol-version" not in first[0]
        assert second[0]["mcp-session-id"] == "up-1"
        assert second[0]["mcp-protocol-version"] == "2025-11-25"
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"X-Key": {"env": "MCPWARD_TEST_SURELY_UNSET"}}, "MCPWARD_TEST_SURELY_UNSET is not set"),
        ({"X-Key": {"file": "/nonexistent/key"}}, "cannot read /nonexistent/key"),
        ({"Mcp-Session-Id": {"env": "HOME"}}, "set by mcpward itself"),
    ],
)
async def test_unusable_header_config_refuses_to_connect(
    headers: dict[str, Any], problem: str
) -> None:
    conn = connection(1, headers=headers)
    with pytest.raises(UpstreamUnavailable) as info:
        await conn.start()
    assert problem in str(info.value)
    assert info.value.reason is UpstreamFailure.NOT_CONNECTED


async def test_modern_requests_get_headers_regenerated_from_the_body(
    upstream: tuple[ScriptedUpstream, int],
) -> None:
    scripted, port = upstream
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    conn = connection(port)
    await conn.start()
    try:
        await exchange(conn, request(1, "tools/list", {"_meta": meta}))
        call = {"name": "regional", "arguments": {"region": "eu-west-1"}, "_meta": meta}
        await exchange(conn, request(2, "tools/call", call))
        await exchange(conn, request(3, "tools/call", {"name": "naïve tool", "_meta": meta}))
        headers = [h for h, _ in scripted.requests]
        assert headers[1]["mcp-protocol-version"] == "2026-07-28"
        assert headers[1]["mcp-method"] == "tools/call"
        assert headers[1]["mcp-name"] == "regional"
        assert headers[1]["mcp-param-region"] == "eu-west-1"
        assert headers[2]["mcp-name"].startswith("=?base64?")
        assert "mcp-session-id" not in headers[1]
    finally:
        await conn.close()


async def test_an_expired_upstream_session_takes_the_connection_down(
    upstream: tuple[ScriptedUpstream, int],
) -> None:
    scripted, port = upstream
    conn = connection(port)
    await conn.start()
    try:
        await exchange(conn, request(1, "initialize", {"protocolVersion": "2025-11-25"}))
        scripted.expire_session = True
        await conn.send(request(2, "tools/list"))
        with pytest.raises(UpstreamUnavailable) as info:
            await asyncio.wait_for(conn.receive(), 10)
        assert info.value.reason is UpstreamFailure.CRASHED
        with pytest.raises(UpstreamUnavailable):
            await conn.send(request(3, "tools/list"))
    finally:
        await conn.close()


async def test_http_errors_and_oversized_answers_fail_only_that_request(
    upstream: tuple[ScriptedUpstream, int],
) -> None:
    scripted, port = upstream
    conn = connection(port, max_frame=2048)
    await conn.start()
    try:
        failed = await exchange(conn, request(1, "explode"))
        assert failed["id"] == 1 and failed["error"]["code"] == -32011
        scripted.big_answer = True
        oversized = await exchange(conn, request(2, "anything"))
        assert oversized == {"__oversized__": True, "id": 2}
        scripted.big_answer = False
        assert (await exchange(conn, request(3, "anything")))["result"] == {}
    finally:
        await conn.close()


async def test_the_egress_filter_applies_without_an_allow_list(
    upstream: tuple[ScriptedUpstream, int],
) -> None:
    scripted, port = upstream
    conn = connection(port, allow_private=[])
    await conn.start()
    try:
        await conn.send(request(1, "initialize", {}))
        with pytest.raises(UpstreamUnavailable) as info:
            await asyncio.wait_for(conn.receive(), 10)
        assert "loopback" in str(info.value)
        assert scripted.requests == []
    finally:
        await conn.close()


def test_identity_digest_ignores_credentials_and_query() -> None:
    assert (
        endpoint_identity("HTTP://User:pw@Example.COM:8080/mcp?x=1#f")
        == "http://example.com:8080/mcp"
    )
    a = connection(80, allow_private=[]).identity_digest
    b = connection(80, allow_private=["127.0.0.1"]).identity_digest
    assert a == b


async def _raw_server(handler: Any) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_an_upstream_that_hangs_up_mid_answer_fails_only_that_request() -> None:
    """A raw server: the first POST gets half an SSE event and a closed socket; the next one
    a proper JSON answer on a new connection."""
    served = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        body = await reader.readexactly(length)
        served += 1
        if served == 1:
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n10\r\nevent: message\ndat\r\n"
            )
        else:
            rid = body.split(b'"id":')[1].split(b",")[0].strip()
            answer = b'{"jsonrpc":"2.0","id":' + rid + b',"result":{}}'
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(answer)).encode()
                + b"\r\n\r\n"
                + answer
            )
        await writer.drain()
        writer.close()

    server, port = await _raw_server(handler)
    conn = connection(port)
    await conn.start()
    try:
        failed = await exchange(conn, request(1, "tools/call", {"name": "x"}))
        assert failed["id"] == 1 and failed["error"]["code"] == -32011
        assert failed["error"]["data"]["reason"] == UpstreamFailure.CRASHED.value
        assert (await exchange(conn, request(2, "tools/call", {"name": "x"})))["result"] == {}
    finally:
        await conn.close()
        server.close()


async def test_an_upstream_that_is_not_listening_takes_the_connection_down() -> None:
    server, port = await _raw_server(lambda r, w: w.close())
    server.close()
    await server.wait_closed()
    conn = connection(port)
    await conn.start()
    try:
        await conn.send(request(1, "initialize", {}))
        with pytest.raises(UpstreamUnavailable) as info:
            await asyncio.wait_for(conn.receive(), 10)
        assert info.value.reason is UpstreamFailure.NOT_CONNECTED
    finally:
        await conn.close()
