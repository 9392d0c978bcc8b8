"""2026-07-28 stateless POSTs: the header ladder (Mcp-Method/Mcp-Name against the body), then one
request through a relay session kept per (client, consent ceiling); answered as JSON, or as SSE
once a related notification arrives. Closing the stream cancels the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    unsupported_protocol_version_rejection,
    validate_mcp_param_headers,
)

from mcpward.pipeline.context import Identity
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
)
from mcpward.protocol.jsonrpc import Frame, FrameKind, Message, RequestId
from mcpward.relay.gateway import tenant_of
from mcpward.transport.http_front.responses import (
    SSE_HEADERS,
    Receive,
    Send,
    send_json,
)
from mcpward.transport.http_front.sse import encode_event

if TYPE_CHECKING:
    from mcpward.relay.gateway import Gateway
    from mcpward.relay.session import Session

log = logging.getLogger("mcpward.http")

SSE_PING_INTERVAL_S = 15.0
GONE: tuple[bool, Message] = (True, {})  # put on a waiter's queue when its client disconnects
POOL_IDLE_S = 600.0
DISCOVER_TIMEOUT_S = 30.0


class Waiter:
    """One POST waiting for its answer; collects the notifications that belong to it."""

    def __init__(self, client_id: RequestId, listen: bool) -> None:
        self.client_id = client_id
        self.listen = listen
        self.queue: asyncio.Queue[tuple[bool, Message]] = asyncio.Queue()
        self.done = False

    def put(self, message: Message, final: bool) -> None:
        self.queue.put_nowait((final, message))


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

    def __init__(self) -> None:
        self.relay: Session | None = None
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
        waiter = Waiter(client_id, listen)
        self.waiters[gw_id] = waiter
        self.last_used = time.monotonic()
        return gw_id, waiter

    def release(self, gw_id: int) -> None:
        self.waiters.pop(gw_id, None)
        self.last_used = time.monotonic()


class ModernPool:
    """Relay sessions for stateless requests, one per (principal, effective consent ceiling)."""

    def __init__(self, gateway: Gateway, max_sessions: int) -> None:
        self.gateway = gateway
        self.max_sessions = max_sessions
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
                pooled = PooledSession()
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
    body: Mapping[str, Any], raw_headers: list[tuple[bytes, bytes]], headers: Mapping[str, str]
) -> InboundLadderRejection | None:
    """The spec's checks of a modern request's envelope and routing headers, in order."""
    duplicated = find_duplicated_routing_header(
        (k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers
    )
    if duplicated is not None:
        return InboundLadderRejection(
            code=errors.HEADER_MISMATCH, message=f"{duplicated} header appears more than once"
        )
    verdict = classify_inbound_request(body, headers=headers)
    return verdict if isinstance(verdict, InboundLadderRejection) else None


def param_header_rejection(
    schema: Any, arguments: Any, headers: Mapping[str, str]
) -> InboundLadderRejection | None:
    if not isinstance(arguments, dict):
        arguments = {}
    try:
        return validate_mcp_param_headers(schema, arguments, headers)
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

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        waiter.queue.put_nowait(GONE)

    watcher = asyncio.create_task(watch())
    try:
        await relay.handle(Frame(FrameKind.REQUEST, {**body, "id": gw_id}))
        await _answer(waiter, wants_sse, send)
    finally:
        watcher.cancel()
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
            try:
                async with asyncio.timeout(SSE_PING_INTERVAL_S if wants_sse else None):
                    item = await waiter.queue.get()
            except TimeoutError:
                if not committed:
                    await _start_sse(send)
                    committed = True
                await _chunk(send, b": ping\n\n")
                continue
            if item is GONE:
                return
            final, message = item
            if final:
                waiter.done = True
                if committed:
                    await _chunk(send, encode_event(jsonrpc.dumps(message)), more=False)
                else:
                    error = message.get("error")
                    code = error.get("code") if isinstance(error, dict) else None
                    status = ERROR_CODE_HTTP_STATUS.get(code, 200) if code is not None else 200
                    await send_json(send, status, message)
                return
            if not wants_sse:
                continue  # a JSON answer has nowhere to put notifications
            if not committed:
                await _start_sse(send)
                committed = True
            await _chunk(send, encode_event(jsonrpc.dumps(message)))
    except OSError:
        return  # the client went away
