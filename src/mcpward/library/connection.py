"""An upstream connection over an `mcp` SDK client session the application already opened: the
relay's JSON-RPC requests go out through the session's raw request path (unknown fields kept),
and the server's list_changed notifications come back to the relay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.canonical import canonical_sha256
from mcpward.protocol.errors import UpstreamFailure
from mcpward.transport.upstream import UpstreamConnection, UpstreamUnavailable

log = logging.getLogger("mcpward.library")

_CLOSED = object()


class SdkSessionConnection(UpstreamConnection):
    """The relay's view of an already initialized SDK `ClientSession` (one per relay link).

    The session's handshake is the application's: `initialize` is answered from the result the
    session already holds, and `notifications/initialized` is not sent again.
    """

    def __init__(self, upstream_id: str, session: ClientSession) -> None:
        super().__init__(upstream_id)
        self._session = session
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._original_handler: Any = None
        info = session.server_info
        self._digest = canonical_sha256(
            {
                "kind": "in-process",
                "server": info.model_dump(mode="json", exclude_none=True) if info else None,
            }
        )

    @property
    def identity_digest(self) -> str:
        return self._digest

    async def start(self) -> None:
        self._inbox = asyncio.Queue()
        # The SDK offers no public hook on a session that is already built: tee its message
        # handler (a documented constructor callback) so list_changed reaches the relay.
        session: Any = self._session
        original = session._message_handler
        self._original_handler = original

        async def tee(message: Any) -> None:
            method = getattr(message, "method", None)
            if isinstance(method, str) and method in methods.LIST_CHANGED:
                self._inbox.put_nowait(jsonrpc.notification(method, None))
            await original(message)

        session._message_handler = tee

    async def send(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            return  # an answer to a server request: the wrapper declares no client capability
        if "id" not in message:
            await self._notify(method, message.get("params"))
            return
        if method == methods.INITIALIZE:
            self._inbox.put_nowait(jsonrpc.result(message["id"], self._initialize_result(message)))
            return
        task = asyncio.ensure_future(self._request(message["id"], method, message.get("params")))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _initialize_result(self, message: dict[str, Any]) -> dict[str, Any]:
        """The session's own handshake, as the relay's initialize asked for it."""
        session = self._session
        done = session.initialize_result
        if done is not None:
            return done.model_dump(by_alias=True, mode="json", exclude_none=True)
        found = session.discover_result  # a 2026-07-28 session: the same facts, handshake-shaped
        result: dict[str, Any] = {
            "protocolVersion": (message.get("params") or {}).get("protocolVersion"),
            "capabilities": found.capabilities.model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            if found is not None
            else {},
        }
        if session.server_info is not None:
            result["serverInfo"] = session.server_info.model_dump(mode="json", exclude_none=True)
        if session.instructions:
            result["instructions"] = session.instructions
        return result

    async def _request(self, request_id: Any, method: str, params: Any) -> None:
        session: Any = self._session
        data: dict[str, Any] = {"method": method}
        if params is not None:
            data["params"] = params
        opts: dict[str, Any] = {}
        try:
            session._stamp(data, opts)  # the session's era: _meta and headers it would add
            raw = await session._dispatcher.send_raw_request(method, data.get("params"), opts)
        except MCPError as exc:
            error = exc.error
            reply = jsonrpc.error(request_id, error.code, error.message, error.data)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("in-process upstream %s: %s failed: %s", self.upstream_id, method, exc)
            reply = jsonrpc.error(
                request_id, errors.UPSTREAM_UNAVAILABLE, "the in-process session failed"
            )
        else:
            reply = jsonrpc.result(request_id, raw)
        self._inbox.put_nowait(reply)

    async def _notify(self, method: str, params: Any) -> None:
        if method in (methods.INITIALIZED, methods.CANCELLED):
            return  # the session was initialized by its owner; cancels stay with the SDK
        dispatcher: Any = self._session._dispatcher
        with contextlib.suppress(Exception):
            await dispatcher.notify(method, params)

    async def receive(self) -> dict[str, Any]:
        item = await self._inbox.get()
        if item is _CLOSED:
            raise UpstreamUnavailable(UpstreamFailure.SHUTTING_DOWN, "closed")
        return dict(item)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._original_handler is not None:
            session: Any = self._session
            session._message_handler = self._original_handler
            self._original_handler = None
        self._inbox.put_nowait(_CLOSED)
