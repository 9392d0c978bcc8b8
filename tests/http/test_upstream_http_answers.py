"""Invalid answers from a Streamable HTTP upstream, in a JSON body or carried by an SSE stream,
fail their one call with -32011 invalid_answer at the link (issue 23, item 6), even when the
answer's id cannot be read: the POST that carried it says which request it was for."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpward.config.upstreams import HttpUpstream, RestartPolicy
from mcpward.protocol.errors import UpstreamFailure
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.upstreams.http import HttpUpstreamConnection
from tests.http.http_asgi_server import serve_asgi

PLANTED = "AKIA" + "Z7QK3M2X9B4V6N8P"


def answer_for(name: str, rid: Any) -> tuple[str, dict[str, Any]]:
    """(how it is carried, the frame) for the tool `name`, e.g. sse:result_list."""
    carrier, _, kind = name.partition(":")
    frames = {
        "ok": {"jsonrpc": "2.0", "id": rid, "result": {"content": []}},
        "result_string": {"jsonrpc": "2.0", "id": rid, "result": PLANTED},
        "result_list": {"jsonrpc": "2.0", "id": rid, "result": [PLANTED]},
        "array_id": {"jsonrpc": "2.0", "id": [rid], "result": {"content": []}},
        "object_id": {"jsonrpc": "2.0", "id": {"id": rid}, "result": {"content": []}},
        "message_number": {"jsonrpc": "2.0", "id": rid, "error": {"code": 1, "message": 2}},
        "jsonrpc_1": {"jsonrpc": "1.0", "id": rid, "result": {"content": []}},
    }
    return carrier, frames[kind]


async def endpoint(request: Request) -> Response:
    body = await request.json()
    if "id" not in body:
        return Response(status_code=202)
    if body["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}}
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": result})
    carrier, frame = answer_for(body["params"]["name"], body["id"])
    if carrier == "json":
        return JSONResponse(frame)
    event = f"event: message\ndata: {json.dumps(frame)}\n\n"
    return Response(event, media_type="text/event-stream")


@pytest.fixture
async def link() -> AsyncIterator[UpstreamLink]:
    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST", "GET", "DELETE"])])
    async with serve_asgi(app) as port:
        spec = HttpUpstream(
            id="up", url=f"http://127.0.0.1:{port}/mcp", allow_private=["127.0.0.1"]
        )

        async def nothing(*_: Any) -> None:
            return None

        made = UpstreamLink(
            HttpUpstreamConnection(spec, 1 << 20),
            RestartPolicy(initial_backoff_s=0.01),
            request_timeout_s=10.0,
            connect_timeout_s=10.0,
            on_message=nothing,
            on_state=nothing,
        )
        await made.ensure_started()
        try:
            yield made
        finally:
            await made.close()


async def call(link: UpstreamLink, name: str) -> dict[str, Any]:
    reply = await asyncio.wait_for(link.request_raw("tools/call", {"name": name}), 15.0)
    return reply


@pytest.mark.parametrize("carrier", ["json", "sse"])
@pytest.mark.parametrize(
    "kind",
    ["result_string", "result_list", "array_id", "object_id", "message_number", "jsonrpc_1"],
)
async def test_an_invalid_http_answer_fails_its_one_call(
    link: UpstreamLink, carrier: str, kind: str
) -> None:
    with pytest.raises(UpstreamError) as caught:
        await call(link, f"{carrier}:{kind}")
    assert caught.value.reason is UpstreamFailure.INVALID_ANSWER
    assert PLANTED not in str(caught.value)
    assert (await call(link, f"{carrier}:ok"))["result"] == {"content": []}
