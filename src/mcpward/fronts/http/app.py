"""The front's ASGI application: Host/Origin, then the credential (before any body byte is read),
then the capped body, then the era: handshake sessions or 2026-07-28 stateless requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
from typing import Any
from urllib.parse import urlsplit

from mcpward.config.http_front import HttpFront
from mcpward.fronts.client_drops import note_dropped
from mcpward.fronts.http.capacity import refuse_for_capacity, refuse_while_store_away
from mcpward.fronts.http.console_mount import (
    build_console,
    is_console_path,
    serve_console,
)
from mcpward.fronts.http.event_log import EventBudget
from mcpward.fronts.http.headers import RequestHeaders, read_headers, repeat_refusal
from mcpward.fronts.http.health import HEALTH_PATHS, HealthProbe
from mcpward.fronts.http.legacy import (
    LegacySession,
    LegacySessions,
    is_initialize,
    stream_key,
    unsupported_version,
)
from mcpward.fronts.http.metrics_mount import METRICS_PATH, MetricsEndpoint
from mcpward.fronts.http.modern import (
    ModernPool,
    ParamHeaderCheck,
    ladder_rejection,
    send_rejection,
    serve_request,
    version_rejection,
)
from mcpward.fronts.http.origin import HostOriginPolicy
from mcpward.fronts.http.responses import (
    Receive,
    Scope,
    Send,
    send_json,
    send_status,
)
from mcpward.identity.authenticator import (
    Authenticator,
    AuthFailure,
    AuthUnavailable,
    Principal,
)
from mcpward.identity.consent import (
    CEILING_PARAM,
    ConsentCeiling,
    requested_ceiling,
    session_identity,
)
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import HANDSHAKE_VERSIONS
from mcpward.protocol.jsonrpc import FrameError, FrameKind
from mcpward.relay.gateway import Gateway

log = logging.getLogger("mcpward.http")

METADATA_PREFIX = "/.well-known/oauth-protected-resource"
# Requests the 2026-07-28 revision removed; a stateless request for one is an unknown method.
REMOVED_AT_2026 = frozenset(
    {
        methods.INITIALIZE,
        methods.PING,
        methods.LOGGING_SET_LEVEL,
        methods.RESOURCES_SUBSCRIBE,
        methods.RESOURCES_UNSUBSCRIBE,
    }
)


class BodyTooLarge(Exception):
    pass


def _accepts(headers: RequestHeaders) -> tuple[bool, bool]:
    return _accepted(headers.get("accept") or "")


@functools.lru_cache(maxsize=64)  # a client sends the same Accept on every request
def _accepted(accept: str) -> tuple[bool, bool]:
    types = [t.strip().split(";")[0].strip().lower() for t in accept.split(",")]
    wildcard = "*/*" in types
    has_json = wildcard or "application/json" in types or "application/*" in types
    has_sse = wildcard or "text/event-stream" in types or "text/*" in types
    return has_json, has_sse


class HttpFrontApp:
    """One instance per listening socket; holds the sessions of both eras."""

    def __init__(
        self, gateway: Gateway, front: HttpFront, authenticator: Authenticator, bound_port: int
    ) -> None:
        self.gateway = gateway
        self.front = front
        self.auth = authenticator
        self.policy = HostOriginPolicy.for_front(front, bound_port)
        self.legacy = LegacySessions(
            gateway,
            front.max_sessions,
            front.session_idle_timeout_s,
            stream_cap_bytes=front.max_stream_buffer_bytes,
            log_bytes=front.max_event_log_bytes_per_session,
            budget=EventBudget(front.max_event_log_bytes),
        )
        self.modern = ModernPool(gateway, front.max_sessions, front.max_stream_buffer_bytes)
        self.param_headers = ParamHeaderCheck()
        host = f"[{front.host}]" if ":" in front.host else front.host
        self.resource = (
            front.oauth.resource
            if front.oauth is not None
            else front.public_url or f"http://{host}:{bound_port}{front.path}"
        )
        parts = urlsplit(self.resource)
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{METADATA_PREFIX}{parts.path}"
        # Protected-resource metadata only with OAuth: with static tokens a client that sees it
        # (the Inspector) starts an OAuth flow there is no authorization server for.
        self._metadata_paths = (
            {METADATA_PREFIX, METADATA_PREFIX + front.path} if front.oauth is not None else set()
        )
        self._challenge_metadata = self.metadata_url if front.oauth is not None else None
        self.console = build_console(
            front, gateway.state_dir, gateway.config.evidence.path, gateway.store
        )
        self.metrics = MetricsEndpoint.for_front(front, gateway.metrics)  # None: 404
        self.health = HealthProbe(gateway, gateway.store_check)
        gateway.processes.warm_up()

    async def close(self) -> None:
        self.health.closing = True
        await self.legacy.close_all()
        await self.modern.close_all()

    # ---- entry --------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] in HEALTH_PATHS:  # before Host and token: balancers probe by address
            await self.health.serve(scope, send)
            return
        try:
            await self._handle(scope, receive, send)
        except Exception:
            # A bug in the front fails closed with an incident id; nothing else is revealed.
            incident = secrets.token_hex(6)
            log.exception("internal error %s in the HTTP front; failed closed", incident)
            message = f"internal error in mcpward (incident {incident}); failed closed"
            body = jsonrpc.error(None, errors.GATEWAY_INTERNAL, message, {"incident": incident})
            # If the response has begun, the server refuses a second start (the ASGI rule):
            # that response is then cut short instead.
            with contextlib.suppress(Exception):
                await send_json(send, 500, body)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = read_headers(scope)  # trimmed in the scope too, before any check
        repeated = repeat_refusal(headers)  # a check must see the only copy, not the last
        if repeated is not None:
            status, why = repeated
            await send_json(send, status, jsonrpc.error(None, errors.INVALID_REQUEST, why))
            return
        host, origin = headers.get("host"), headers.get("origin")
        problem = self.policy.judge(headers.count("host"), host, origin)
        if problem is not None:
            await send_json(send, 403, jsonrpc.error(None, errors.INVALID_REQUEST, problem))
            return
        path = scope["path"]
        if path == METRICS_PATH and self.metrics is not None:
            await self.metrics.serve(scope, send)
            return
        if self.console is not None and is_console_path(path):
            await serve_console(self.console, scope, receive, send)
            return
        if path in self._metadata_paths:
            await self._metadata(scope, send)
            return
        if path.rstrip("/") != self.front.path.rstrip("/"):
            await send_status(send, 404, b"Not Found")
            return
        principal = await self._authenticate(headers, send)
        if principal is None:
            return
        method = scope["method"]
        version = headers.get("mcp-protocol-version")
        modern = version is not None and version not in HANDSHAKE_VERSIONS
        if method == "POST":
            await self._post(scope, receive, send, headers, principal, modern)
        elif method in ("GET", "DELETE"):
            if modern:
                await send_status(send, 405, b"Method Not Allowed", [(b"allow", b"POST")])
            else:
                await self._legacy_other(scope, receive, send, headers, principal)
        else:
            await send_status(send, 405, b"Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])

    async def _authenticate(self, headers: RequestHeaders, send: Send) -> Principal | None:
        try:
            if headers.count("authorization") > 1:
                raise AuthFailure(401, "more than one Authorization header", "invalid_request")
            return await self.auth.authenticate(headers.get("authorization"))
        except AuthUnavailable as away:
            await refuse_while_store_away(send, away.description)
            return None
        except AuthFailure as failure:
            challenge = failure.challenge(self._challenge_metadata).encode("latin-1", "replace")
            body = jsonrpc.error(None, errors.INVALID_REQUEST, failure.description)
            await send_json(send, failure.status, body, [(b"www-authenticate", challenge)])
            return None

    async def _metadata(self, scope: Scope, send: Send) -> None:
        if scope["method"] != "GET":
            await send_status(send, 405, b"Method Not Allowed", [(b"allow", b"GET")])
            return
        oauth = self.front.oauth
        document: dict[str, Any] = {
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
            "resource_name": "mcpward",
        }
        if oauth is not None:
            document["authorization_servers"] = oauth.authorization_servers or [oauth.issuer]
            if oauth.scopes_supported:
                document["scopes_supported"] = oauth.scopes_supported
        await send_json(send, 200, document)

    # ---- POST ------------------------------------------------------------------------------

    async def _read_body(
        self, headers: RequestHeaders, receive: Receive, send: Send
    ) -> bytes | None:
        cap = self.front.max_body_bytes
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > cap):
            await send_status(send, 413, b"Payload Too Large")
            return None
        body = bytearray()
        try:
            async with asyncio.timeout(self.front.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    body += message.get("body", b"")
                    if len(body) > cap:
                        await send_status(send, 413, b"Payload Too Large")
                        return None
                    if not message.get("more_body", False):
                        return bytes(body)
        except TimeoutError:
            await send_status(send, 408, b"Request Timeout")
            return None

    async def _post(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Principal,
        modern: bool,
    ) -> None:
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            await send_status(send, 415, b"Unsupported Media Type: use application/json")
            return
        raw = await self._read_body(headers, receive, send)
        if raw is None:
            return
        try:
            body = jsonrpc.parse_value(raw)  # strict JSON, nesting capped (jsonrpc.MAX_DEPTH)
        except FrameError as exc:
            await _refuse_frame(exc, send)
            return
        if modern:
            await self._post_modern(scope, receive, send, headers, principal, body)
        else:
            await self._post_legacy(scope, receive, send, headers, principal, body)

    async def _post_modern(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Principal,
        body: Any,
    ) -> None:
        has_json, has_sse = _accepts(headers)
        if not has_json:
            await send_status(send, 406, b"Not Acceptable: accept application/json")
            return
        if isinstance(body, dict) and "id" not in body and isinstance(body.get("method"), str):
            # Client notifications have no meaning over stateless HTTP (closing a stream is the
            # cancellation), and acting on a posted cancel would let one caller cancel another.
            rejection = version_rejection(headers.get("mcp-protocol-version", ""))
            if rejection is not None:
                await send_rejection(send, rejection, None)
            else:
                await send_status(send, 202)
            return
        try:
            frame = jsonrpc.classify(body)
        except FrameError as exc:
            await send_json(send, 400, jsonrpc.error(exc.request_id, exc.code, exc.message))
            return
        if frame.kind is not FrameKind.REQUEST:
            await send_json(
                send,
                400,
                jsonrpc.error(
                    None,
                    errors.INVALID_REQUEST,
                    "Body must be a single JSON-RPC request or notification object",
                ),
            )
            return
        message = frame.message
        if message["method"] in REMOVED_AT_2026:
            error = jsonrpc.error(
                message["id"], errors.METHOD_NOT_FOUND, f"Method not found: {message['method']}"
            )
            await send_json(send, 404, error)
            return
        if message["method"] == methods.SUBSCRIPTIONS_LISTEN and not has_sse:
            await send_status(send, 406, b"Not Acceptable: subscriptions/listen is an SSE stream")
            return
        rejection = ladder_rejection(message, headers)
        if rejection is None:
            rejection = self._param_headers(message, headers)
        if rejection is not None:
            await send_rejection(send, rejection, message["id"])
            return
        valid, requested = requested_ceiling(message.get("params"))
        if not valid:
            await send_json(send, 400, _bad_ceiling(message["id"]))
            return
        identity = session_identity(principal.identity, principal.ceiling, requested)
        key = (principal.binding, principal.ceiling.narrowed_to(requested).value)
        params = message.get("params") or {}
        pooled = await self.modern.session_for(key, identity, params.get("_meta") or {})
        if pooled is None:
            await refuse_for_capacity(send, message["id"])
            return
        await serve_request(pooled, message, has_sse, receive, send)

    def _param_headers(self, message: dict[str, Any], headers: RequestHeaders) -> Any:
        """Mcp-Param-* headers must agree with the arguments (validated against the tool's
        schema from the catalog; the upstream receives headers regenerated from the body)."""
        if message["method"] != methods.TOOLS_CALL:
            return None
        params = message.get("params") or {}
        name = params.get("name")
        route = self.gateway.namespace.inward(name) if isinstance(name, str) else None
        if route is None:
            return None
        snapshot = self.gateway.catalog.snapshot(route[0])
        tool = snapshot.tool(route[1]) if snapshot is not None else None
        if tool is None:
            return None
        return self.param_headers.rejection(
            tool.get("inputSchema"), params.get("arguments"), headers
        )

    async def _post_legacy(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Principal,
        body: Any,
    ) -> None:
        has_json, has_sse = _accepts(headers)
        if not (has_json and has_sse):
            await send_status(
                send, 406, b"Not Acceptable: accept both application/json and text/event-stream"
            )
            return
        try:
            frame = jsonrpc.classify(body)
        except FrameError as exc:
            await _refuse_frame(exc, send)
            return
        version = headers.get("mcp-protocol-version")
        if unsupported_version(version):
            body = jsonrpc.error(None, errors.INVALID_REQUEST, "Unsupported protocol version")
            await send_json(send, 400, body)
            return
        message = frame.message
        if is_initialize(message):
            await self._open_session(message, principal, receive, send)
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            body = jsonrpc.error(None, errors.INVALID_REQUEST, "Bad Request: Missing session ID")
            await send_json(send, 400, body)
            return
        session = self._owned_session(session_id, principal)
        if session is None:
            await _session_not_found(send)
            return
        if frame.kind is FrameKind.REQUEST:
            await session.post_request(message, version or "2025-03-26", receive, send)
        else:
            await session.post_other(frame)
            await send_status(send, 202)

    async def _open_session(
        self, message: dict[str, Any], principal: Principal, receive: Receive, send: Send
    ) -> None:
        params = message.get("params")
        valid, requested = requested_ceiling(params)
        if not valid:
            await send_json(send, 400, _bad_ceiling(message.get("id")))
            return
        identity = session_identity(principal.identity, principal.ceiling, requested)
        session = await self.legacy.create(principal.binding, identity)
        if session is None:
            await refuse_for_capacity(send, message.get("id"))
            return
        session.init_key = stream_key(message["id"])
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        await session.post_request(message, str(version or ""), receive, send)
        if session.init_failed:
            await self.legacy.discard(session)  # nothing to keep from a refused handshake

    async def _legacy_other(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Principal,
    ) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            body = jsonrpc.error(None, errors.INVALID_REQUEST, "Bad Request: Missing session ID")
            await send_json(send, 400, body)
            return
        session = self._owned_session(session_id, principal)
        if session is None:
            await _session_not_found(send)
            return
        if scope["method"] == "DELETE":
            await self.legacy.discard(session)
            await send_status(send, 200)
            return
        if not _accepts(headers)[1]:
            await send_status(send, 406, b"Not Acceptable: accept text/event-stream")
            return
        await session.get(headers.get("last-event-id"), receive, send)

    def _owned_session(self, session_id: str, principal: Principal) -> LegacySession | None:
        """The session, if it exists and belongs to this credential (else it does not exist)."""
        session = self.legacy.get(session_id)
        if session is None or session.binding != principal.binding:
            return None
        return session


async def _session_not_found(send: Send) -> None:
    body = jsonrpc.error(None, errors.INVALID_REQUEST, "Not Found: unknown or expired session")
    await send_json(send, 404, body)


def _bad_ceiling(request_id: Any) -> dict[str, Any]:
    allowed = ", ".join(c.value for c in ConsentCeiling)
    return jsonrpc.error(
        request_id if isinstance(request_id, (str, int)) else None,
        errors.INVALID_PARAMS,
        f"{CEILING_PARAM} must be one of {allowed}",
    )


async def _refuse_frame(exc: FrameError, send: Send) -> None:
    """A body the edge refused: a notification is dropped (202, never relayed or answered),
    anything else answered 400 with its JSON-RPC error."""
    if exc.notification:
        note_dropped("bad-notification", "notification", exc.message)
        await send_status(send, 202)
        return
    message = "Parse error" if exc.code == errors.PARSE_ERROR else exc.message
    await send_json(send, 400, jsonrpc.error(exc.request_id, exc.code, message))
