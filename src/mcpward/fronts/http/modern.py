"""2026-07-28 stateless POSTs: the header ladder (Mcp-Method/Mcp-Name against the body), then one
request through a relay session kept per (client, consent ceiling); answered as JSON, or as SSE
once a related notification arrives. Closing the stream cancels the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    find_invalid_x_mcp_header,
    unsupported_protocol_version_rejection,
    validate_mcp_param_headers,
    x_mcp_header_map,
)

from mcpward.fronts.http.headers import RequestHeaders
from mcpward.fronts.http.mailbox import Mailbox
from mcpward.fronts.http.responses import (
    SSE_HEADERS,
    Receive,
    Send,
    send_body,
    send_json,
)
from mcpward.pipeline.context import Identity
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
)
from mcpward.protocol.jsonrpc import Frame, FrameKind, Message, RequestId
from mcpward.protocol.outgoing import encode_outgoing
from mcpward.relay.gateway import tenant_of
from mcpward.streams.sse import encode_event

if TYPE_CHECKING:
    from mcpward.relay.gateway import Gateway
    from mcpward.relay.session import Session

log = logging.getLogger("mcpward.http")

SSE_PING_INTERVAL_S = 15.0
# A request still unanswered after this long starts watching for its client's disconnect (the
# cancellation at 2026-07-28); a quicker answer needs no watcher task.
WATCH_AFTER_S = 0.2
GONE: tuple[bool, Message] = (True, {})  # put on a waiter's queue when its client disconnects
PING: tuple[bool, Message] = (False, {})  # put on a waiter's queue when a keep-alive is due
# put on a waiter's queue when its client fell behind (the stream closes: the cancellation)
OVERFLOWED: tuple[bool, Message] = (False, {"overflowed": True})
OVERFLOW_LOG_INTERVAL_S = 10.0
_overflow_logged_at = [-math.inf]
POOL_IDLE_S = 600.0
DISCOVER_TIMEOUT_S = 30.0
MAX_SCHEMAS = 1024  # tool schemas whose Mcp-Param-* header names are remembered
# checked for repeats in this order (a mapping of headers cannot show the SDK a repeat)
ROUTING_HEADERS = (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER)


class Waiter:
    """One POST waiting for its answer; collects the notifications that belong to it."""

    __slots__ = (
        "_timer",
        "_watcher",
        "client_id",
        "done",
        "listen",
        "overflowed",
        "queue",
        "streams",
    )

    def __init__(
        self, client_id: RequestId, listen: bool, stream_cap_bytes: int | None = None
    ) -> None:
        self.client_id = client_id
        self.listen = listen
        self.queue: Mailbox[tuple[bool, Message]] = Mailbox(stream_cap_bytes)
        self.done = False
        self.streams = True  # False: answered as JSON, which has nowhere to put notifications
        self.overflowed = False
        self._timer: asyncio.TimerHandle | None = None
        self._watcher: asyncio.Task[None] | None = None

    def put(self, message: Message, final: bool) -> None:
        if final:
            self.queue.put_nowait((final, message))  # the answer always goes (frame-capped)
            return
        if not self.streams or self.overflowed:
            return
        if not self.queue.offer((final, message), len(jsonrpc.dumps(message))):
            # The client does not read its stream: close it (the cancellation at 2026-07-28)
            # rather than hold what it does not take.
            self.overflowed = True
            self.queue.put_nowait(OVERFLOWED)
            _log_overflow(self.queue.queued_bytes)

    def watch_later(self, receive: Receive, pings: bool) -> None:
        """After WATCH_AFTER_S: watch for the client's disconnect, and (SSE) queue a keep-alive
        every SSE_PING_INTERVAL_S. One timer handle per request until then."""
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(WATCH_AFTER_S, self._slow, loop, receive, pings)

    def _slow(self, loop: asyncio.AbstractEventLoop, receive: Receive, pings: bool) -> None:
        self._watcher = loop.create_task(self._watch(receive))
        self._timer = None
        if pings:
            self._timer = loop.call_later(SSE_PING_INTERVAL_S - WATCH_AFTER_S, self._ping, loop)

    def _ping(self, loop: asyncio.AbstractEventLoop) -> None:
        self.queue.put_nowait(PING)
        self._timer = loop.call_later(SSE_PING_INTERVAL_S, self._ping, loop)

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.queue.put_nowait(GONE)

    def stop_watching(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None


def _log_overflow(queued_bytes: int) -> None:
    now = time.monotonic()
    if now - _overflow_logged_at[0] >= OVERFLOW_LOG_INTERVAL_S:
        _overflow_logged_at[0] = now
        log.warning(
            "a 2026-07-28 stream's client fell %d bytes behind; stream closed (request cancelled)",
            queued_bytes,
        )


def _own_subscription(message: Message, waiter: Waiter) -> Message:
    """The relay tags a subscription's notifications with our listen id (the POST's id in
    the pooled session); the client knows the subscription by its own listen request id."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not waiter.listen or not isinstance(meta, dict) or META_SUBSCRIPTION_ID not in meta:
        return message
    assert isinstance(params, dict)
    meta = {**meta, META_SUBSCRIPTION_ID: waiter.client_id}
    return {**message, "params": {**params, "_meta": meta}}


class PooledSession:
    """A relay session serving one principal's stateless requests (ids remapped per POST)."""

    def __init__(self, stream_cap_bytes: int | None = None) -> None:
        self.relay: Session | None = None
        self.stream_cap_bytes = stream_cap_bytes  # what one request's stream may hold
        self.waiters: dict[int, Waiter] = {}
        self.ids = itertools.count(1)
        self.last_used = time.monotonic()

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        if "method" not in message:
            waiter = self.waiters.get(message.get("id"))  # type: ignore[arg-type]
            if waiter is not None:
                waiter.put({**message, "id": waiter.client_id}, final=True)
            return
        if "id" in message:
            log.debug("dropped server request %s: no back-channel at 2026-07-28", message["method"])
            return
        if related_request_id is not None:
            waiter = self.waiters.get(related_request_id)  # type: ignore[arg-type]
            if waiter is not None:
                waiter.put(_own_subscription(message, waiter), final=False)
            return
        plain = [w for w in self.waiters.values() if not w.listen]
        if len(plain) == 1:
            plain[0].put(message, final=False)

    def register(self, client_id: RequestId, listen: bool) -> tuple[int, Waiter]:
        gw_id = next(self.ids)
        waiter = Waiter(client_id, listen, self.stream_cap_bytes)
        self.waiters[gw_id] = waiter  # not idle while it waits: last_used is set on release
        return gw_id, waiter

    def release(self, gw_id: int) -> None:
        self.waiters.pop(gw_id, None)
        self.last_used = time.monotonic()


class ModernPool:
    """Relay sessions for stateless requests, one per (principal, effective consent ceiling)."""

    def __init__(
        self, gateway: Gateway, max_sessions: int, stream_cap_bytes: int | None = None
    ) -> None:
        self.gateway = gateway
        self.max_sessions = max_sessions
        self.stream_cap_bytes = stream_cap_bytes
        self._sessions: dict[tuple[str, str], PooledSession] = {}
        self._lock = asyncio.Lock()

    async def session_for(
        self, key: tuple[str, str], identity: Identity, meta: Mapping[str, Any]
    ) -> PooledSession | None:
        pooled = self._sessions.get(key)
        if pooled is not None:
            return pooled
        async with self._lock:
            pooled = self._sessions.get(key)
            if pooled is None:
                await self._reap()
                if len(self._sessions) >= self.max_sessions:
                    return None
                if self.gateway.processes.refusal(tenant_of(identity, stateless=True)):
                    return None  # a process cap is reached: refused before anything starts
                pooled = PooledSession(self.stream_cap_bytes)
                pooled.relay = await self.gateway.open_session(
                    pooled, identity, None, stateless=True
                )
                await _discover(pooled, meta)
                self._sessions[key] = pooled
        return pooled

    async def _reap(self) -> None:
        now = time.monotonic()
        for key, pooled in list(self._sessions.items()):
            if not pooled.waiters and now - pooled.last_used > POOL_IDLE_S:
                del self._sessions[key]
                if pooled.relay is not None:
                    await self.gateway.close_session(pooled.relay)

    async def close_all(self) -> None:
        sessions = list(self._sessions.values())
        self._sessions.clear()
        relays = [pooled.relay for pooled in sessions if pooled.relay is not None]
        # All at once: each session's upstreams may take their grace periods to stop.
        await asyncio.gather(
            *(self.gateway.close_session(relay) for relay in relays), return_exceptions=True
        )


async def _discover(pooled: PooledSession, meta: Mapping[str, Any]) -> None:
    """Open the session the way a stateless client does, so the relay knows each upstream's
    answer to server/discover (its catalog reads and contract checks depend on it) even when
    the client itself goes straight to its first call."""
    assert pooled.relay is not None
    envelope = {k: meta[k] for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k in meta}
    gw_id, waiter = pooled.register("discover", listen=False)
    try:
        await pooled.relay.handle(
            Frame(FrameKind.REQUEST, jsonrpc.request(gw_id, methods.DISCOVER, {"_meta": envelope}))
        )
        await asyncio.wait_for(_final(waiter), DISCOVER_TIMEOUT_S)
    except TimeoutError:
        log.warning("server/discover through the relay timed out; continuing without it")
    finally:
        pooled.release(gw_id)


async def _final(waiter: Waiter) -> Message:
    while True:
        final, message = await waiter.queue.get()
        if final:
            return message


def ladder_rejection(
    body: Mapping[str, Any], headers: RequestHeaders
) -> InboundLadderRejection | None:
    """The spec's checks of a modern request's envelope and routing headers, in order."""
    for name in ROUTING_HEADERS:
        if name in headers.repeated:
            return _repeated(name)
    verdict = classify_inbound_request(body, headers=headers.values)
    return verdict if isinstance(verdict, InboundLadderRejection) else None


def _repeated(name: str) -> InboundLadderRejection:
    return InboundLadderRejection(
        code=errors.HEADER_MISMATCH, message=f"{name} header appears more than once"
    )


class ParamHeaderCheck:
    """`Mcp-Param-*` headers against a tools/call's arguments, as the tool's schema declares
    them (`x-mcp-header`). Which headers a schema declares is worked out once per schema
    object; a tool that declares none (most) costs a dictionary lookup per call."""

    def __init__(self) -> None:
        self._declared: dict[int, tuple[Any, tuple[str, ...]]] = {}

    def declared(self, schema: Any) -> tuple[str, ...]:
        """The lower-case header names `schema` declares (none for an invalid schema, which
        the SDK's check does not validate either)."""
        entry = self._declared.get(id(schema))
        if entry is None or entry[0] is not schema:
            if len(self._declared) >= MAX_SCHEMAS:
                self._declared.clear()
            try:
                valid = find_invalid_x_mcp_header(schema) is None
                tokens = x_mcp_header_map(schema).values() if valid else ()
            except Exception:
                tokens = ()
            entry = (schema, tuple(f"mcp-param-{token}".lower() for token in tokens))
            self._declared[id(schema)] = entry
        return entry[1]

    def rejection(
        self, schema: Any, arguments: Any, headers: RequestHeaders
    ) -> InboundLadderRejection | None:
        declared = self.declared(schema)
        if not declared:
            return None
        for name in declared:
            if name in headers.repeated:  # a mapping cannot show the SDK a repeated header
                return _repeated(name)
        if not isinstance(arguments, dict):
            arguments = {}
        try:
            return validate_mcp_param_headers(schema, arguments, headers.values)
        except Exception:
            return None


def version_rejection(version: str) -> InboundLadderRejection | None:
    return unsupported_protocol_version_rejection(version)


async def send_rejection(
    send: Send, rejection: InboundLadderRejection, request_id: RequestId | None
) -> None:
    status = ERROR_CODE_HTTP_STATUS.get(rejection.code, 400)
    body = jsonrpc.error(request_id, rejection.code, rejection.message, rejection.data)
    await send_json(send, status, body)


async def serve_request(
    pooled: PooledSession, body: Message, wants_sse: bool, receive: Receive, send: Send
) -> None:
    """Run one request through the pooled relay session and write its answer."""
    relay = pooled.relay
    assert relay is not None
    listen = body.get("method") == methods.SUBSCRIPTIONS_LISTEN
    gw_id, waiter = pooled.register(body["id"], listen)
    waiter.streams = wants_sse
    waiter.watch_later(receive, pings=wants_sse)
    try:
        await relay.handle(Frame(FrameKind.REQUEST, {**body, "id": gw_id}))
        await _answer(waiter, wants_sse, send)
    finally:
        waiter.stop_watching()
        if not waiter.done:
            # Closing the stream is the cancellation at 2026-07-28.
            with contextlib.suppress(Exception):
                await relay.handle(
                    Frame(
                        FrameKind.NOTIFICATION,
                        jsonrpc.notification(methods.CANCELLED, {"requestId": gw_id}),
                    )
                )
        pooled.release(gw_id)


async def _start_sse(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})


async def _chunk(send: Send, data: bytes, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _answer(waiter: Waiter, wants_sse: bool, send: Send) -> None:
    # Until a related notification arrives the answer can still be plain JSON with the status
    # the spec maps its error code to; SSE is committed only when there is something to stream.
    committed = False
    try:
        while True:
            item = await waiter.queue.get()
            if item is GONE:
                return
            if item is OVERFLOWED:
                if not committed:
                    await _start_sse(send)
                await _chunk(send, b"", more=False)  # ended without an answer
                return
            if item is PING:
                if not committed:
                    await _start_sse(send)
                    committed = True
                await _chunk(send, b": ping\n\n")
                continue
            final, message = item
            encoded = encode_outgoing(message)  # None: it cannot be written (logged)
            if final:
                waiter.done = True
                if encoded is None:
                    return
                message, data = encoded
                if committed:
                    await _chunk(send, encode_event(data), more=False)
                else:
                    error = message.get("error")
                    code = error.get("code") if isinstance(error, dict) else None
                    status = ERROR_CODE_HTTP_STATUS.get(code, 200) if code is not None else 200
                    await send_body(send, status, data, b"application/json")
                return
            if not wants_sse or encoded is None:
                continue  # a JSON answer has nowhere to put notifications
            if not committed:
                await _start_sse(send)
                committed = True
            await _chunk(send, encode_event(encoded[1]))
    except OSError:
        return  # the client went away
