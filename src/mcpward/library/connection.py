"""An upstream connection over an `mcp` SDK client session the application already opened: the
relay's JSON-RPC requests go out through the session's raw request path (plain dicts, unknown
fields kept), and the server's list_changed notifications come back to the relay in wire order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.errors import UpstreamFailure
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable

log = logging.getLogger("mcpward.library")

# How long close() waits for cancelled requests to send their cancel through the SDK.
_CANCEL_GRACE_S = 1.0

NotifyIntercept = Callable[[str, Mapping[str, Any] | None], bool]


class SdkInternalsMissing(TypeError):
    """The installed `mcp` SDK lacks what the wrapper drives a session through."""


@dataclass(frozen=True, slots=True)
class _End:
    """Queued when the connection ends (closed, or the SDK session is gone): `receive` raises
    it, and the relay's link goes down."""

    reason: UpstreamFailure
    detail: str


def check_session(session: ClientSession) -> None:
    """Fail at once (not on the first call) if this SDK version cannot be driven raw."""
    dispatcher = getattr(session, "_dispatcher", None)
    missing = [
        name
        for name, ok in (
            ("ClientSession._dispatcher.send_raw_request", hasattr(dispatcher, "send_raw_request")),
            ("ClientSession._dispatcher.notify", hasattr(dispatcher, "notify")),
            ("ClientSession._stamp", callable(getattr(session, "_stamp", None))),
        )
        if not ok
    ]
    if missing:
        raise SdkInternalsMissing(
            "mcpward.guarded drives the session through the SDK's raw request path, and this "
            f"`mcp` version has no {', '.join(missing)}; use mcp>=2.3,<3 or `mcpward run`"
        )


class SdkSessionConnection(UpstreamConnection):
    """The relay's view of an initialized SDK `ClientSession` (one per relay link).

    * Requests go out through the session's dispatcher (`send_raw_request`: params and results
      are plain dicts) after the session's own era stamp (the `_meta` and HTTP headers the SDK
      adds to every request it sends itself).
    * The handshake is the application's: `initialize` is answered from the result the session
      already holds and `notifications/initialized` is not sent again. A 2026-07-28 session's
      `server/discover` is sent for real (it is stateless), so its answer is the server's own.
    * `notifications/cancelled` from the relay (its deadline, or the caller gave up) cancels the
      SDK request, which tells the server in its own id space; progress comes back by token.
    * list_changed is taken from the dispatcher's receive-order notification hook, before any
      later answer from the server is delivered.
    """

    def __init__(
        self,
        upstream_id: str,
        session: ClientSession,
        identity_digest: str,
        executable_sha256: str | None = None,
    ) -> None:
        super().__init__(upstream_id)
        self._session = session
        self._digest = identity_digest
        self.executable_sha256 = executable_sha256  # read by the gateway's provenance
        self._inbox: asyncio.Queue[dict[str, Any] | _End] = asyncio.Queue()
        self._requests: dict[Any, asyncio.Task[None]] = {}
        self._hook: _NotificationTee | None = None
        self._open = False
        self._generation = 0  # bumped by every start: a reopened link reads a fresh inbox
        self._dead: _End | None = None  # the SDK session itself is gone: no start will help
        # Delivery accounting for `settled`: items queued, and items the relay has finished with
        # (the link reads one message, handles it, then asks for the next).
        self._queued = 0
        self._taken = 0
        self._handled = 0
        self._progress = asyncio.Event()

    @property
    def identity_digest(self) -> str:
        return self._digest

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Open (again, after `close`: the relay re-opens a link this way) over the same SDK
        session, with a fresh inbox. A session whose connection is gone cannot be reopened."""
        if self._dead is None and _dispatcher_closed(self._session):
            self._dead = _End(UpstreamFailure.CRASHED, "the SDK session's connection closed")
        if self._dead is not None:
            raise UpstreamUnavailable(
                UpstreamFailure.NOT_CONNECTED, "the SDK session is closed; it cannot be reopened"
            )
        if self._open:
            return
        self._inbox = asyncio.Queue()
        self._queued = self._taken = self._handled = 0
        self._generation += 1
        self._open = True
        self._hook = _NotificationTee.install(self._session, self._on_notification)
        if self._hook is None:
            log.warning(
                "in-process upstream %s: this SDK session offers no notification hook; "
                "list_changed is not seen (contracts are re-read on relist_interval_s only)",
                self.upstream_id,
            )

    async def close(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        pending = list(self._requests.values())
        for task in pending:
            task.cancel()  # each lets the SDK send the server its own cancel
        self._requests.clear()
        if pending:
            await asyncio.wait(pending, timeout=_CANCEL_GRACE_S)
        if self._open:
            self._open = False
            self._put(_End(UpstreamFailure.SHUTTING_DOWN, "closed"))
        self._progress.set()

    # ---- relay -> server ---------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        if self._dead is not None:
            raise UpstreamUnavailable(self._dead.reason, self._dead.detail)
        if not self._open:
            raise UpstreamUnavailable(UpstreamFailure.SHUTTING_DOWN, "closed")
        method = message.get("method")
        if not isinstance(method, str):
            return  # an answer to a server request: the relay never forwards any to us
        params = message.get("params")
        params = params if isinstance(params, dict) else None
        if "id" not in message:
            await self._notify(method, params)
            return
        request_id = message["id"]
        if method == methods.INITIALIZE:
            self._put(self._initialize_reply(request_id, params or {}))
            return
        if method == methods.DISCOVER and self._session.discover_result is None:
            self._put(
                jsonrpc.error(
                    request_id,
                    errors.METHOD_NOT_FOUND,
                    "the SDK session negotiated the handshake era; server/discover is not sent",
                )
            )
            return
        task = asyncio.ensure_future(self._request(request_id, method, params))
        self._requests[request_id] = task
        task.add_done_callback(lambda _: self._requests.pop(request_id, None))

    def _initialize_reply(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        """The session's own handshake, as the relay's initialize asked for it."""
        session = self._session
        done = session.initialize_result
        if done is not None:
            return jsonrpc.result(
                request_id, done.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
        # A 2026-07-28 session asked to bridge: the same facts, handshake-shaped.
        found = session.discover_result
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion"),
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
        return jsonrpc.result(request_id, result)

    async def _request(self, request_id: Any, method: str, params: dict[str, Any] | None) -> None:
        session: Any = self._session
        data = _own_copy(method, params)  # the stamp writes into _meta: not the relay's dict
        opts: dict[str, Any] = {}
        meta = params.get("_meta") if params is not None else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        try:
            session._stamp(data, opts)  # the session's era: the _meta and headers it would add
            if token is not None:
                opts["on_progress"] = self._progress_relay(token)
            raw = await session._dispatcher.send_raw_request(method, data.get("params"), opts)
        except asyncio.CancelledError:
            raise  # the relay gave up on it (and already answered its caller)
        except MCPError as exc:
            error = exc.error
            if error.code == CONNECTION_CLOSED and _dispatcher_closed(self._session):
                self._end(UpstreamFailure.CRASHED, "the SDK session's connection closed")
                return  # the link fails this request with the others: -32011 crashed
            reply = jsonrpc.error(request_id, error.code, error.message, error.data)
        except Exception as exc:
            # The SDK could not send it (not running, a rejected envelope): no answer exists.
            log.warning(
                "in-process upstream %s: %s could not be sent: %s",
                self.upstream_id,
                method,
                type(exc).__name__,
            )
            reply = errors.made_by_gateway(
                jsonrpc.error(
                    request_id,
                    errors.UPSTREAM_UNAVAILABLE,
                    f"upstream {self.upstream_id!r} unavailable: the SDK session could not send it",
                    {"upstream": self.upstream_id, "reason": UpstreamFailure.NOT_CONNECTED.value},
                )
            )
        else:
            reply = jsonrpc.result(request_id, raw)
        self._put(reply)

    def _progress_relay(self, token: Any) -> Any:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            self._put(jsonrpc.notification(methods.PROGRESS, params))

        return on_progress

    async def _notify(self, method: str, params: dict[str, Any] | None) -> None:
        if method == methods.INITIALIZED:
            return  # the session was initialized by its owner
        if method == methods.CANCELLED:
            task = self._requests.get((params or {}).get("requestId"))
            if task is not None:
                task.cancel()  # the SDK sends its own cancel, with the id the server knows
            return
        session: Any = self._session
        data = _own_copy(method, params)
        opts: dict[str, Any] = {}
        try:
            session._stamp(data, opts)
            await session._dispatcher.notify(method, data.get("params"), opts)
        except Exception as exc:
            log.debug("in-process upstream %s: notification dropped: %s", self.upstream_id, exc)

    # ---- server -> relay ---------------------------------------------------------------------

    def _on_notification(self, method: str) -> None:
        if method in methods.LIST_CHANGED:
            # A fresh notification without the server's _meta: a 2026-07-28 subscription tag
            # names the application's listen stream, which the relay knows nothing of.
            self._put(jsonrpc.notification(method, None))

    def _put(self, item: dict[str, Any] | _End) -> None:
        self._queued += 1
        self._inbox.put_nowait(item)

    def _end(self, reason: UpstreamFailure, detail: str) -> None:
        if self._dead is None:
            self._dead = _End(reason, detail)
            if self._open:
                self._put(self._dead)
            self._progress.set()

    async def receive(self) -> dict[str, Any]:
        # The link handles each message before it asks for the next: all taken so far are done.
        self._handled = self._taken
        self._progress.set()
        item = await self._inbox.get()
        self._taken += 1
        if isinstance(item, _End):
            self._handled = self._queued  # nothing after the end is read: do not wait for it
            self._progress.set()
            raise UpstreamUnavailable(item.reason, item.detail)
        return item

    async def settled(self) -> None:
        """Return once the relay has handled everything this connection queued before the call
        (list_changed above all), so a request judged next is judged on what the session had
        received by then. Immediate when the link is not reading (not started, or ended)."""
        target, generation = self._queued, self._generation
        while (
            self._open
            and self._dead is None
            and self._generation == generation
            and self._handled < target
        ):
            self._progress.clear()
            await self._progress.wait()


class _NotificationTee:
    """Sees each server notification the SDK session receives, in receive order, and passes it
    on unchanged. Prefers the dispatcher's synchronous intercept (it runs on the receive loop,
    before any later message is processed); falls back to the session's message handler."""

    def __init__(self, owner: Any, attribute: str, original: Any) -> None:
        self._owner = owner
        self._attribute = attribute
        self._original = original
        self.active = True
        self.installed: Any = None

    @classmethod
    def install(
        cls, session: ClientSession, on_method: Callable[[str], None]
    ) -> _NotificationTee | None:
        dispatcher: Any = getattr(session, "_dispatcher", None)
        if dispatcher is not None and hasattr(dispatcher, "_on_notify_intercept"):
            original: NotifyIntercept | None = dispatcher._on_notify_intercept
            tee = cls(dispatcher, "_on_notify_intercept", original)

            def intercept(method: str, params: Mapping[str, Any] | None) -> bool:
                if tee.active:
                    on_method(method)
                return original(method, params) if original is not None else False

            tee.installed = intercept
            dispatcher._on_notify_intercept = intercept
            return tee
        handler = getattr(session, "_message_handler", None)
        if handler is None:
            return None
        tee = cls(session, "_message_handler", handler)

        async def message_handler(message: Any) -> None:
            method = getattr(message, "method", None)
            if tee.active and isinstance(method, str):
                on_method(method)
            await handler(message)

        tee.installed = message_handler
        session._message_handler = message_handler
        return tee

    def remove(self) -> None:
        self.active = False
        # Put the original back only if nobody chained after us; otherwise stay, inert.
        if getattr(self._owner, self._attribute, None) is self.installed:
            setattr(self._owner, self._attribute, self._original)


def _own_copy(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {"method": method}
    if params is not None:
        params = dict(params)
        if isinstance(params.get("_meta"), dict):
            params["_meta"] = dict(params["_meta"])
        data["params"] = params
    return data


def _dispatcher_closed(session: ClientSession) -> bool:
    return getattr(getattr(session, "_dispatcher", None), "_closed", False) is True
