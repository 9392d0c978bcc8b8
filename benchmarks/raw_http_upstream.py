"""A minimal, fast MCP upstream over Streamable HTTP for benchmarks: raw ASGI, no SDK overhead.

    python benchmarks/raw_http_upstream.py --port PORT

It answers initialize (with a session id), tools/list and tools/call (one text block) as JSON
bodies and takes notifications with 202, so the HTTP benchmark can show what the gateway itself
adds when the upstream costs almost nothing.
"""

from __future__ import annotations

import argparse
import json
import secrets
from typing import Any

import uvicorn

TOOL = {
    "name": "test_simple_text",
    "description": "Returns a short text.",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, rid = message.get("method"), message.get("id")
    if rid is None or method is None:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-http-upstream", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "This is a simple text response."}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "not found"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["method"] != "POST":
        status = 200 if scope["method"] == "DELETE" else 405
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    message = json.loads(body)
    reply = answer(message)
    if reply is None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    data = json.dumps(reply).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    if message.get("method") == "initialize":
        headers.append((b"mcp-session-id", secrets.token_hex(8).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="warning", http="httptools", loop="uvloop"
    )
