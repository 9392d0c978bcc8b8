"""A request/response client over one upstream connection, for commands that talk to a server
directly (snapshot, screen, validate): the gateway's own connector, not a second JSON-RPC stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcpward.upstreams.base import UpstreamConnection

PROTOCOL_VERSION = "2025-11-25"


class DirectClient:
    """Sends one request at a time and returns its whole response frame (`result` or `error`).

    Server-to-client requests (roots, sampling, elicitation) are refused: we offer none."""

    def __init__(self, conn: UpstreamConnection, client_name: str) -> None:
        self.conn = conn
        self.client_name = client_name
        self._ids: Iterator[int] = iter(range(1, 1_000_000_000))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        await self.conn.send(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        while True:
            message = await self.conn.receive()
            if "method" in message and "id" in message:
                await self.conn.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32601, "message": "not supported"},
                    }
                )
                continue
            if message.get("id") == request_id:
                return message

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The `result` object of a request; None for an error or a malformed answer."""
        message = await self.request(method, params)
        result = message.get("result")
        return result if "error" not in message and isinstance(result, dict) else None

    async def initialize(self) -> dict[str, Any] | None:
        """The handshake (`initialize` then `notifications/initialized`); None if refused."""
        init = await self.result(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": self.client_name, "version": "1"},
            },
        )
        if init is not None:
            await self.conn.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    async def list_all(self, method: str, key: str, max_pages: int = 100) -> list[dict[str, Any]]:
        """Every item of a paginated list (stops at `max_pages` or on an error)."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(max_pages):
            result = await self.result(method, {"cursor": cursor} if cursor else {})
            if result is None:
                break
            page = result.get(key)
            items += [i for i in page if isinstance(i, dict)] if isinstance(page, list) else []
            cursor = result.get("nextCursor") if isinstance(result.get("nextCursor"), str) else None
            if not cursor:
                break
        return items
