"""Raw ASGI response writers for the front: JSON-RPC bodies, plain statuses, SSE headers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcpward.protocol import jsonrpc

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]


async def send_body(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = b"application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    all_headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    all_headers += headers or []
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_json(
    send: Send, status: int, value: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_body(send, status, jsonrpc.dumps(value), b"application/json", headers)


async def send_status(
    send: Send, status: int, text: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_body(send, status, text, b"text/plain; charset=utf-8", headers)
