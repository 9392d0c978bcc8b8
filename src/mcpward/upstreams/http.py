"""The Streamable HTTP upstream connector (both eras) through the egress filter.

Headers come from the upstream's own config (env/file secrets), never from the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from mcp.shared.inbound import (
    NAME_BEARING_METHODS,
    encode_header_value,
    mcp_param_headers,
    x_mcp_header_map,
)

from mcpward.config.upstreams import HttpUpstream
from mcpward.egress.policy import EgressBlocked, EgressConfigError, EgressPolicy
from mcpward.egress.session import egress_session
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.canonical import canonical_sha256
from mcpward.protocol.eras import META_PROTOCOL_VERSION, MODERN_VERSIONS
from mcpward.protocol.errors import UpstreamFailure
from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.streams.sse import SseDecoder, SseEvent
from mcpward.telemetry.log_limits import LimitedLog
from mcpward.telemetry.propagation import TRACEPARENT
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable

log = logging.getLogger("mcpward.upstream")

# Headers the connector owns; a configured header may not replace them.
RESERVED_HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "content-length",
        "host",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
        "transfer-encoding",
        "connection",
        "traceparent",
    }
)
RESUME_ATTEMPTS = 2
GET_STREAM_MAX_FAILURES = 5
MAX_RETRY_S = 30.0
DELETE_TIMEOUT_S = 2.0
DRAIN_S = 5.0
# Bytes of received messages the relay has not taken yet; past it the streams are not read on
# (TCP holds the rest upstream), so a fast upstream and a slow client cost bounded memory.
INBOX_CAP_BYTES = 16 * 1024 * 1024


def endpoint_identity(url: str) -> str:
    """The URL without credentials, query or fragment, lower-cased scheme and host."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", "", ""))


def _is_modern(message: Mapping[str, Any]) -> str | None:
    params = message.get("params")
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict):
            version = meta.get(META_PROTOCOL_VERSION)
            if version in MODERN_VERSIONS:
                return str(version)
    return None


# How a handshake-only server over HTTP refuses a 2026-07-28 request it cannot place.
HANDSHAKE_ONLY_STATUSES = (400, 404, 405)
MODERN_ERROR_CODES = frozenset(
    {
        errors.HEADER_MISMATCH,
        errors.MISSING_CLIENT_CAPABILITY,
        errors.UNSUPPORTED_PROTOCOL_VERSION,
        errors.INVALID_PARAMS,
    }
)


def _discover_refused(answer: dict[str, Any], status: int) -> dict[str, Any]:
    """A server/discover refused at the HTTP level with an error that is not one of 2026-07-28:
    the server speaks the handshake era only. The client gets what such a server answers over
    stdio, -32601, so the refusal is one answer whatever the upstream's transport."""
    error = answer.get("error")
    if not isinstance(error, dict) or error.get("code") in MODERN_ERROR_CODES:
        return answer
    return {
        **answer,
        "error": {
            "code": errors.METHOD_NOT_FOUND,
            "message": "Method not found: server/discover",
            "data": {"upstream_status": status, "upstream_code": error.get("code")},
        },
    }


class HttpUpstreamConnection(UpstreamConnection):
    """One logical connection to a Streamable HTTP server: a session (handshake era) or a
    sequence of self-contained POSTs (2026-07-28). Every request is its own POST; messages from
    its JSON or SSE answer, and from the GET stream, are queued for `receive`.
    """

    def __init__(self, spec: HttpUpstream, max_frame_bytes: int) -> None:
        super().__init__(spec.id)
        self.spec = spec
        self.url = spec.url
        self.max_frame_bytes = max_frame_bytes
        try:
            self.policy = EgressPolicy.from_allow_list(spec.allow_private)
        except EgressConfigError as exc:
            raise ValueError(f"upstream {spec.id!r}: {exc}") from None
        self._digest = canonical_sha256({"kind": "http", "url": endpoint_identity(spec.url)})
        self._client: aiohttp.ClientSession | None = None
        # (message, id of our request whose stream carried it, or None) or the end of the line
        self._inbox: asyncio.Queue[tuple[dict[str, Any], Any, int] | UpstreamUnavailable] = (
            asyncio.Queue()
        )
        self._inbox_bytes = 0
        self._inbox_room = asyncio.Event()  # set while the inbox is under INBOX_CAP_BYTES
        self._inbox_room.set()
        self._headers: dict[str, str] = {}
        self._session_id: str | None = None
        self._protocol_version: str | None = None
        self._posts: dict[Any, asyncio.Task[None]] = {}
        self._post_modern: dict[Any, bool] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._get_task: asyncio.Task[None] | None = None
        self._param_headers: dict[str, dict[tuple[str, ...], str]] = {}
        self._failed = False
        self._limited = LimitedLog(log)  # what the upstream can make us log, bounded

    @property
    def identity_digest(self) -> str:
        return self._digest

    @property
    def session_id(self) -> str | None:
        return self._session_id

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        await self.close()
        headers: dict[str, str] = {}
        for name, ref in self.spec.headers.items():
            if name.lower() in RESERVED_HEADERS:
                raise UpstreamUnavailable(
                    UpstreamFailure.NOT_CONNECTED, f"header {name!r} is set by mcpward itself"
                )
            try:
                headers[name] = resolve_secret(ref)
            except SecretUnavailable as exc:
                raise UpstreamUnavailable(
                    UpstreamFailure.NOT_CONNECTED, f"header {name!r}: {exc}"
                ) from None
        self._headers = headers
        self._inbox = asyncio.Queue()
        self._inbox_bytes = 0
        self._inbox_room.set()
        self._session_id = None
        self._protocol_version = None
        self._failed = False
        self._client = egress_session(self.policy, connect_timeout=30.0, limit=64)

    async def close(self) -> None:
        client, self._client = self._client, None
        tasks: list[asyncio.Task[None]] = list(self._tasks)
        if self._get_task is not None:
            tasks.append(self._get_task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()
        self._posts.clear()
        self._post_modern.clear()
        self._get_task = None
        if client is None:
            return
        if self._session_id is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(DELETE_TIMEOUT_S):
                    response = await client.delete(
                        self.url, headers=self._base_headers(None), allow_redirects=False
                    )
                    response.release()
        self._session_id = None
        await client.close()

    async def receive(self) -> dict[str, Any]:
        return (await self.receive_related())[0]

    async def receive_related(self) -> tuple[dict[str, Any], Any]:
        item = await self._inbox.get()
        if isinstance(item, UpstreamUnavailable):
            raise item
        message, related, size = item
        self._inbox_bytes -= size
        if self._inbox_bytes < INBOX_CAP_BYTES:
            self._inbox_room.set()
        return message, related

    def _queue(self, message: dict[str, Any], related: Any = None, size: int = 0) -> None:
        self._inbox.put_nowait((message, related, size))
        self._inbox_bytes += size
        if self._inbox_bytes >= INBOX_CAP_BYTES:
            self._inbox_room.clear()

    async def _room(self) -> None:
        """Before reading on: wait while the relay has INBOX_CAP_BYTES still to take."""
        if not self._inbox_room.is_set():
            await self._inbox_room.wait()

    # ---- sending -------------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_encoded(message, jsonrpc.dumps(message))

    async def send_encoded(self, message: dict[str, Any], data: bytes) -> None:
        client = self._client
        if client is None or self._failed:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, "not connected")
        if len(data) > self.max_frame_bytes:
            raise UpstreamUnavailable(UpstreamFailure.FRAME_TOO_LARGE, f"{len(data)} bytes")
        method = message.get("method")
        if method is not None and "id" in message:
            request_id = message["id"]
            task = asyncio.create_task(self._post_request(client, message, data))
            self._posts[request_id] = task
            self._post_modern[request_id] = self._modern(message) is not None
            self._track(task)
            task.add_done_callback(functools.partial(self._forget, request_id))
            return
        if method == methods.CANCELLED:
            params = message.get("params") or {}
            rid = params.get("requestId")
            inflight = self._posts.get(rid)
            modern = self._post_modern.get(rid, False)
            if inflight is not None:
                inflight.cancel()  # at 2026-07-28 closing the stream *is* the cancellation
            if modern:
                return
        await self._post_one_way(client, message, data)
        if method == methods.INITIALIZED and self._get_task is None:
            self._get_task = asyncio.create_task(self._get_stream_loop(client))

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _forget(self, request_id: Any, task: asyncio.Task[None]) -> None:
        if self._posts.get(request_id) is task:
            del self._posts[request_id]
            self._post_modern.pop(request_id, None)

    def _base_headers(self, message: Mapping[str, Any] | None) -> dict[str, str]:
        headers = dict(self._headers)
        headers["Accept"] = "application/json, text/event-stream"
        method = message.get("method") if message is not None else None
        if self._session_id is not None and method != methods.INITIALIZE:
            headers["Mcp-Session-Id"] = self._session_id
        modern = self._modern(message) if message is not None else None
        if modern is not None:
            headers["MCP-Protocol-Version"] = modern
        elif self._protocol_version is not None and method != methods.INITIALIZE:
            headers["MCP-Protocol-Version"] = self._protocol_version
        return headers

    def _modern(self, message: Mapping[str, Any]) -> str | None:
        """The 2026-07-28 version a message is sent under; None on a connection opened with
        `initialize` (a bridged one): it stays in the era it negotiated, whatever `_meta` says."""
        if self._protocol_version is not None:
            return None
        return _is_modern(message)

    def _request_headers(self, message: Mapping[str, Any]) -> dict[str, str]:
        headers = self._base_headers(message)
        headers["Content-Type"] = "application/json"
        traceparent = TRACEPARENT.get()  # set only around a traced round trip (not a credential)
        if traceparent is not None:
            headers["traceparent"] = traceparent
        method = str(message.get("method"))
        if self._modern(message) is not None:
            # Regenerated from the body we forward, never copied from the client's request.
            headers["Mcp-Method"] = method
            params = message.get("params") or {}
            key = NAME_BEARING_METHODS.get(method)
            if key is not None and isinstance(params.get(key), str):
                headers["Mcp-Name"] = encode_header_value(params[key])
            if method == methods.TOOLS_CALL:
                header_map = self._param_headers.get(str(params.get("name")))
                arguments = params.get("arguments")
                if header_map and isinstance(arguments, dict):
                    headers.update(mcp_param_headers(header_map, arguments))
        return headers

    async def _post_one_way(self, client: aiohttp.ClientSession, message: Any, data: bytes) -> None:
        """A notification or a response: the server answers 202 with no body."""
        try:
            headers = self._request_headers(message)
            async with client.post(
                self.url, data=data, headers=headers, allow_redirects=False
            ) as response:
                status = response.status
                await response.read()
        except EgressBlocked as exc:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, str(exc)) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, type(exc).__name__) from None
        if status == 404 and self._session_id is not None:
            self._fail(UpstreamFailure.CRASHED, "the upstream ended the session")
        elif status >= 400:
            log.info(
                "upstream %s answered HTTP %d to a %s",
                self.upstream_id,
                status,
                message.get("method", "response"),
            )

    async def _post_request(self, client: aiohttp.ClientSession, message: Any, data: bytes) -> None:
        request_id = message["id"]
        method = message["method"]
        try:
            async with client.post(
                self.url, data=data, headers=self._request_headers(message), allow_redirects=False
            ) as response:
                if method == methods.INITIALIZE:
                    sid = response.headers.get("mcp-session-id")
                    if sid:
                        self._session_id = sid
                answered = await self._read_answer(response, request_id, method)
                last_id, retry_s = answered
        except EgressBlocked as exc:
            log.warning("upstream %s: %s", self.upstream_id, exc)
            self._fail(UpstreamFailure.NOT_CONNECTED, str(exc))
            return
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            self._fail(UpstreamFailure.NOT_CONNECTED, type(exc).__name__)
            return
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._deliver_failure(request_id, UpstreamFailure.CRASHED, type(exc).__name__)
            return
        if last_id is None:
            return
        # The stream ended before the response: resume it (handshake era, SSE with event ids).
        for _ in range(RESUME_ATTEMPTS):
            await asyncio.sleep(retry_s)
            try:
                async with client.get(
                    self.url,
                    headers={**self._base_headers(None), "Last-Event-ID": last_id},
                    allow_redirects=False,
                ) as response:
                    if response.status != 200:
                        break
                    resumed_last, retry_s = await self._read_answer(response, request_id, method)
            except (aiohttp.ClientError, TimeoutError):
                continue
            if resumed_last is None:
                return
            last_id = resumed_last
        self._deliver_failure(request_id, UpstreamFailure.CRASHED, "stream ended without an answer")

    async def _read_answer(
        self, response: aiohttp.ClientResponse, request_id: Any, method: str
    ) -> tuple[str | None, float]:
        """Queue what a POST (or resumed GET) stream carries. Returns (last event id, retry) if
        the stream ended before the answer to `request_id`, else (None, 0)."""
        status = response.status
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status == 404 and self._session_id is not None and method != methods.INITIALIZE:
            self._fail(UpstreamFailure.CRASHED, "the upstream ended the session")
            return None, 0.0
        if ctype == "text/event-stream" and status == 200:
            decoder = SseDecoder(self.max_frame_bytes)
            retry_s = 1.0
            chunks = response.content.iter_any()
            async for chunk in chunks:
                answered = False
                for event in decoder.feed(chunk):
                    if event.retry_ms is not None:
                        retry_s = min(event.retry_ms / 1000.0, MAX_RETRY_S)
                    if self._take_event(event, request_id, method):
                        answered = True
                await self._room()
                if answered:
                    # The server ends the stream after the answer; reading to its end lets the
                    # connection be reused instead of being torn down.
                    with contextlib.suppress(TimeoutError, aiohttp.ClientError):
                        async with asyncio.timeout(DRAIN_S):
                            async for _ in chunks:
                                pass
                    return None, 0.0
            if decoder.last_event_id is not None:
                return decoder.last_event_id, retry_s
            self._deliver_failure(request_id, UpstreamFailure.CRASHED, "stream ended unanswered")
            return None, 0.0
        body = await self._read_capped(response)
        if body is None:
            self._queue({"__oversized__": True, "id": request_id})
            return None, 0.0
        if ctype == "application/json" and body:
            try:
                parsed = jsonrpc.loads(body)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict) and ("result" in parsed or "error" in parsed):
                if parsed.get("id") is None and "error" in parsed:
                    parsed = {**parsed, "id": request_id}  # an HTTP-level rejection of our request
                if method == methods.DISCOVER and status in HANDSHAKE_ONLY_STATUSES:
                    parsed = _discover_refused(parsed, status)
                self._deliver(parsed, method, request_id, len(body))
                return None, 0.0
        self._queue(
            errors.made_by_gateway(
                jsonrpc.error(
                    request_id,
                    errors.UPSTREAM_UNAVAILABLE,
                    f"upstream {self.upstream_id!r} answered HTTP {status} "
                    "without a JSON-RPC answer",
                    {"upstream": self.upstream_id, "reason": UpstreamFailure.UNPARSEABLE.value},
                )
            )
        )
        return None, 0.0

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes | None:
        body = bytearray()
        async for chunk in response.content.iter_any():
            body += chunk
            if len(body) > self.max_frame_bytes:
                return None
        return bytes(body)

    def _take_event(self, event: SseEvent, request_id: Any, method: str) -> bool:
        """Queue one SSE event's message; True if it answered `request_id` (None: the GET
        stream, whose messages belong to no request)."""
        if event.oversized:
            self._limited.log(
                logging.WARNING,
                self.upstream_id,
                "oversized event",
                "upstream %s sent an SSE event over the size cap",
                self.upstream_id,
            )
            self._queue({"__oversized__": True, "id": request_id})
            return True
        if event.event != "message" or not event.data:
            return False
        try:
            parsed = jsonrpc.loads(event.data)
        except (ValueError, RecursionError):
            self._limited.log(
                logging.WARNING,
                self.upstream_id,
                "unparseable event",
                "upstream %s sent an unparseable SSE event; dropped",
                self.upstream_id,
            )
            return False
        if not isinstance(parsed, dict):
            return False
        answers = request_id is not None and parsed.get("id") == request_id
        self._deliver(parsed, method if answers else None, request_id, len(event.data))
        return "method" not in parsed and answers

    def _deliver(
        self, message: dict[str, Any], method: str | None, related: Any, size: int = 0
    ) -> None:
        result = message.get("result")
        if isinstance(result, dict) and "method" not in message:
            if method == methods.INITIALIZE and isinstance(result.get("protocolVersion"), str):
                self._protocol_version = result["protocolVersion"]
            elif method == methods.TOOLS_LIST:
                self._learn_param_headers(result)
        self._queue(message, related, size)

    def _learn_param_headers(self, result: Mapping[str, Any]) -> None:
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                try:
                    header_map = x_mcp_header_map(tool.get("inputSchema"))
                except Exception:  # a malformed schema declares nothing usable
                    header_map = {}
                if header_map:
                    self._param_headers[tool["name"]] = header_map
                else:
                    self._param_headers.pop(tool["name"], None)

    def _deliver_failure(self, request_id: Any, reason: UpstreamFailure, detail: str) -> None:
        log.info("upstream %s: request failed: %s (%s)", self.upstream_id, reason.value, detail)
        self._queue(
            errors.made_by_gateway(
                jsonrpc.error(
                    request_id,
                    errors.UPSTREAM_UNAVAILABLE,
                    f"upstream {self.upstream_id!r} unavailable: {reason.value}",
                    {"upstream": self.upstream_id, "reason": reason.value},
                )
            )
        )

    def _fail(self, reason: UpstreamFailure, detail: str) -> None:
        """The connection as a whole is unusable: `receive` raises and the relay restarts it."""
        if not self._failed:
            self._failed = True
            self._inbox.put_nowait(UpstreamUnavailable(reason, detail))

    # ---- the GET stream (handshake era) --------------------------------------------------

    async def _get_stream_loop(self, client: aiohttp.ClientSession) -> None:
        failures = 0
        last_id: str | None = None
        retry_s = 1.0
        while failures < GET_STREAM_MAX_FAILURES and not self._failed:
            headers = self._base_headers(None)
            headers["Accept"] = "text/event-stream"
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
            try:
                async with client.get(self.url, headers=headers, allow_redirects=False) as response:
                    if response.status == 405:
                        return  # the server offers no GET stream
                    if response.status == 404 and self._session_id is not None:
                        self._fail(UpstreamFailure.CRASHED, "the upstream ended the session")
                        return
                    ctype = response.headers.get("content-type", "")
                    if response.status != 200 or not ctype.startswith("text/event-stream"):
                        failures += 1
                    else:
                        failures = 0
                        decoder = SseDecoder(self.max_frame_bytes)
                        async for chunk in response.content.iter_any():
                            for event in decoder.feed(chunk):
                                if event.retry_ms is not None:
                                    retry_s = min(event.retry_ms / 1000.0, MAX_RETRY_S)
                                if not event.oversized:
                                    self._take_event(event, None, "")
                            await self._room()
                        last_id = decoder.last_event_id or last_id
            except (aiohttp.ClientError, TimeoutError, EgressBlocked):
                failures += 1
            await asyncio.sleep(retry_s)
