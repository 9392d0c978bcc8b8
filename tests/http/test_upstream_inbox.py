"""An HTTP upstream that sends faster than the relay takes cannot make the connector buffer
without bound (issue 23, item 10): past its cap the connector stops reading the stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcpward.config.upstreams import HttpUpstream
from mcpward.upstreams import http as upstream_http
from mcpward.upstreams.http import HttpUpstreamConnection
from tests.http.http_asgi_server import serve_asgi

NOTES = 2000
NOTE_BYTES = 10_000
CAP = 256 * 1024
CHUNK_SLACK = 512 * 1024
HANG_GUARD_S = 60.0


async def endpoint(request: Request) -> Response:
    body = await request.json()
    if "id" not in body:
        return Response(status_code=202)

    async def events() -> AsyncIterator[bytes]:
        for n in range(NOTES):  # 20 MB of notifications, then the answer
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": f"{n}-" + "n" * NOTE_BYTES},
            }
            yield b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n"
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": {}}
        yield b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


def queued_bytes(conn: HttpUpstreamConnection) -> int:
    return conn._inbox.qsize() * NOTE_BYTES


async def test_the_inbox_stops_reading_at_its_cap(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(upstream_http, "INBOX_CAP_BYTES", CAP, raising=False)
    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    async with serve_asgi(app) as port:
        spec = HttpUpstream(
            id="up", url=f"http://127.0.0.1:{port}/mcp", allow_private=["127.0.0.1"]
        )
        conn = HttpUpstreamConnection(spec, 1 << 20)
        await conn.start()
        try:
            await conn.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}})
            async with asyncio.timeout(HANG_GUARD_S):
                while queued_bytes(conn) < CAP:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(1.0)  # room to grow, if the reader did not stop
            # the cap, plus at most what one read of the stream brought in
            assert queued_bytes(conn) <= CAP + CHUNK_SLACK
            # nothing is lost: every notification, then the answer
            seen = 0
            async with asyncio.timeout(HANG_GUARD_S):
                while True:
                    message = await conn.receive()
                    if "method" in message:
                        seen += 1
                        continue
                    assert message["id"] == 1 and message["result"] == {}
                    break
            assert seen == NOTES
        finally:
            await conn.close()
