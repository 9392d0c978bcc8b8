"""Handshake-era HTTP sessions: ids we mint and bind to the authenticated client, each with its
own relay session. A request answered within JSON_WINDOW_S, with nothing before the answer, gets
a plain JSON body; otherwise its own SSE stream (priming event, related messages, the answer).
The rest goes to the GET stream; every event can be replayed with `Last-Event-ID`. Closing a
stream is not cancellation in this era.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from typing import TYPE_CHECKING, Any

from mcpward.fronts.http.event_log import (
    DEFAULT_SESSION_BYTES,
    Event,
    EventBudget,
    EventLog,
)
from mcpward.fronts.http.mailbox import Mailbox
from mcpward.fronts.http.responses import (
    SSE_HEADERS,
    Receive,
    Send,
    send_body,
    send_json,
    send_status,
)
from mcpward.pipeline.context import Identity
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import HANDSHAKE_VERSIONS
from mcpward.protocol.jsonrpc import Frame, FrameKind, Message, RequestId
from mcpward.protocol.outgoing import encode_outgoing
from mcpward.relay.gateway import tenant_of
from mcpward.streams.sse import encode_event

if TYPE_CHECKING:
    from mcpward.relay.gateway import Gateway
    from mcpward.relay.session import Session

log = logging.getLogger("mcpward.http")

RETRY_MS = 1000
PING_INTERVAL_S = 15.0
# A quick answer is sent as one JSON body (two writes instead of four, no SSE parsing); a slow
# or chatty request switches to SSE, so priming and keep-alive pings still reach the client.
JSON_WINDOW_S = 1.0
GET_STREAM = "get"
PING = b": ping\n\n"
PRIMING_FROM = "2025-11-25"  # older clients cannot parse an event with empty data

DROPPED: Event = ("", None, True)  # put on a stream's queue when its client disconnects
WINDOW_OVER: Event = ("", None, False)  # put on a request's queue when its JSON window ends
# put on a stream's queue when its client fell behind
OVERFLOWED: Event = ("overflowed", None, False)
OVERFLOW_LOG_INTERVAL_S = 10.0
Events = Mailbox[Event | None]  # None: nothing more will come on the stream


def stream_key(request_id: RequestId) -> str:
    return f"r:{type(request_id).__name__}:{request_id}"


class LegacySession:
    """One client session; it is the relay session's Downstream."""

    def __init__(
        self,
        session_id: str,
        binding: str,
        identity: Identity,
        log_bytes: int = DEFAULT_SESSION_BYTES,
        budget: EventBudget | None = None,
        stream_cap_bytes: int | None = None,
    ) -> None:
        self.id = session_id
        self.binding = binding
        self.identity = identity
        self.relay: Session | None = None
        self.log = EventLog(max_bytes=log_bytes, budget=budget)
        self.stream_cap_bytes = stream_cap_bytes  # what one stream may hold for a slow client
        self._overflow_logged_at = -math.inf
        self.live: dict[str, Events] = {}
        self.pending: set[str] = set()  # request streams whose answer has not been sent yet
        self.last_used = time.monotonic()
        self.closed = False
        self.init_failed = False
        self.init_key: str | None = None

    # ---- relay -> client ----------------------------------------------------------------------

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        if self.closed:
            return  # the session is gone: nobody can read or resume its streams
        encoded = encode_outgoing(message)
        if encoded is None:
            return  # logged; nothing that cannot be written is kept or half-sent
        message, data = encoded
        final = "method" not in message
        if final and message.get("id") is not None:
            key = stream_key(message["id"])
            self.pending.discard(key)
            if "error" in message and key == self.init_key:
                self.init_failed = True
        elif not final and related_request_id is not None:
            key = stream_key(related_request_id)
            if key not in self.pending:
                key = GET_STREAM  # its request is answered: the message can only go standalone
        else:
            key = GET_STREAM
        event_id = self.log.append(key, data, final)
        queue = self.live.get(key)
        if queue is not None and not queue.offer((event_id, data, final), len(data)):
            self._overflow(key, queue)

    def _overflow(self, key: str, queue: Events) -> None:
        """A client does not read its stream: close it (once what was sent is written) and
        queue nothing more for it; it resumes with Last-Event-ID from the event log."""
        if self.live.get(key) is queue:
            del self.live[key]
        queue.put_nowait(OVERFLOWED)
        now = time.monotonic()
        if now - self._overflow_logged_at >= OVERFLOW_LOG_INTERVAL_S:
            self._overflow_logged_at = now
            log.warning(
                "HTTP session %s…: a stream's client fell %d bytes behind; stream closed "
                "(resumable with Last-Event-ID)",
                self.id[:8],
                queue.queued_bytes,
            )

    # ---- client -> relay ----------------------------------------------------------------------

    async def post_request(
        self, message: Message, version: str, receive: Receive, send: Send
    ) -> None:
        assert self.relay is not None
        key = stream_key(message["id"])
        if key in self.pending:
            body = jsonrpc.error(
                message["id"], errors.INVALID_REQUEST, "request id is already in use"
            )
            await send_json(send, 400, body)
            return
        self.pending.add(key)
        queue: Events = Mailbox(self.stream_cap_bytes)
        self.live[key] = queue
        try:
            await self.relay.handle(Frame(FrameKind.REQUEST, message))
            if await self._answer_as_json(queue, send):
                return
            await self._stream(key, queue, version >= PRIMING_FROM, receive, send)
        finally:
            if self.live.get(key) is queue:
                del self.live[key]
            if not self.relay.in_flight(message["id"]):
                # Cancelled (no answer will come): forget it, or the session stays busy for good.
                self.pending.discard(key)
            self.last_used = time.monotonic()

    async def post_other(self, frame: Frame) -> None:
        assert self.relay is not None
        self.last_used = time.monotonic()
        await self.relay.handle(frame)

    async def get(self, last_event_id: str | None, receive: Receive, send: Send) -> None:
        """The standalone stream, or the resumption of a dropped stream after `last_event_id`."""
        key = GET_STREAM
        backlog: list[Event] = []
        if last_event_id is not None:
            found = self.log.after(last_event_id)
            if found is None:
                await send_status(send, 404, b"Not Found: unknown event id")
                return
            key, backlog = found
        if key in self.live:
            await send_status(send, 409, b"Conflict: this stream is already open")
            return
        queue: Events = Mailbox(self.stream_cap_bytes)
        for event in backlog:
            queue.put_nowait(event, _size(event))  # bounded by the session's event log
        if key != GET_STREAM and key not in self.pending and not any(e[2] for e in backlog):
            queue.put_nowait(None)  # nothing more will come on that stream
        self.live[key] = queue
        try:
            await self._stream(key, queue, True, receive, send)
        finally:
            if self.live.get(key) is queue:
                del self.live[key]

    # ---- writers ------------------------------------------------------------------------------

    async def _answer_as_json(self, queue: Events, send: Send) -> bool:
        """Send the answer as JSON if it is the first event and comes within the window; else
        leave the queue as it was (the first event, if any, back in front) and return False."""
        # One timer handle for the window (cheaper than a timeout scope around the wait).
        window = asyncio.get_running_loop().call_later(JSON_WINDOW_S, queue.put_nowait, WINDOW_OVER)
        try:
            first = await queue.get()
        finally:
            window.cancel()
        if first is WINDOW_OVER:
            return False
        if first is not None and first is not DROPPED and first[2] and first[1] is not None:
            await send_body(send, 200, first[1], headers=[(b"mcp-session-id", self.id.encode())])
            return True
        backlog = [first]
        while not queue.empty():
            backlog.append(queue.get_nowait())
        for event in backlog:
            if event is not WINDOW_OVER:  # the window may have ended as the first event came
                queue.put_nowait(event, _size(event))
        return False

    async def _stream(
        self,
        key: str,
        queue: Events,
        priming: bool,
        receive: Receive,
        send: Send,
    ) -> None:
        headers = list(SSE_HEADERS)
        headers.append((b"mcp-session-id", self.id.encode("ascii")))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if priming:
            event_id = self.log.append(key, None, False)
            head = f"id: {event_id}\nretry: {RETRY_MS}\ndata: \n\n".encode()
            await send({"type": "http.response.body", "body": head, "more_body": True})
        watcher = asyncio.ensure_future(_watch_disconnect(receive, queue))
        try:
            while True:
                try:
                    async with asyncio.timeout(PING_INTERVAL_S):
                        event = await queue.get()
                except TimeoutError:
                    await send({"type": "http.response.body", "body": PING, "more_body": True})
                    continue
                if event is None:
                    break
                if event is DROPPED:
                    return  # a dropped stream; its events stay in the log for resumption
                if event is OVERFLOWED:
                    break  # end the stream; its events stay in the log for resumption
                event_id, data, final = event
                assert data is not None
                body = encode_event(data, event_id)
                await send({"type": "http.response.body", "body": body, "more_body": not final})
                if final:
                    return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return
        finally:
            watcher.cancel()

    def end_streams(self) -> None:
        self.closed = True
        for queue in self.live.values():
            queue.put_nowait(None)
        self.log.close()


def _size(event: Event | None) -> int:
    return len(event[1]) if event is not None and event[1] is not None else 0


async def _watch_disconnect(receive: Receive, queue: Events) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    queue.put_nowait(DROPPED)


def unsupported_version(version: str | None) -> bool:
    return version is not None and version not in HANDSHAKE_VERSIONS


class LegacySessions:
    """The live handshake-era sessions, by the ids we minted; idle ones are closed."""

    def __init__(
        self,
        gateway: Gateway,
        max_sessions: int,
        idle_timeout_s: float,
        *,
        stream_cap_bytes: int | None = None,
        log_bytes: int = DEFAULT_SESSION_BYTES,
        budget: EventBudget | None = None,
    ) -> None:
        self.gateway = gateway
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.stream_cap_bytes = stream_cap_bytes
        self.log_bytes = log_bytes
        self.budget = budget if budget is not None else EventBudget()  # shared by every session
        self._sessions: dict[str, LegacySession] = {}
        self._reaper: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> LegacySession | None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.last_used = time.monotonic()
        return session

    async def create(self, binding: str, identity: Identity) -> LegacySession | None:
        """A new session, or None when the limit is reached."""
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever())
        if len(self._sessions) >= self.max_sessions:
            await self._reap()
            if len(self._sessions) >= self.max_sessions:
                return None
        if self.gateway.processes.refusal(tenant_of(identity, stateless=False)):
            return None  # a process cap is reached: refused before anything starts
        session = LegacySession(
            secrets.token_urlsafe(24),
            binding,
            identity,
            self.log_bytes,
            self.budget,
            self.stream_cap_bytes,
        )
        session.relay = await self.gateway.open_session(session, identity, session.id)
        self._sessions[session.id] = session
        return session

    async def discard(self, session: LegacySession) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        session.end_streams()
        if session.relay is not None:
            with contextlib.suppress(Exception):
                await self.gateway.close_session(session.relay)

    async def _reap(self) -> None:
        cutoff = time.monotonic() - self.idle_timeout_s
        for session in list(self._sessions.values()):
            if session.last_used < cutoff and not session.live and not session.pending:
                log.info("HTTP session %s… idle; closed", session.id[:8])
                await self.discard(session)

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(min(60.0, self.idle_timeout_s))
            await self._reap()

    async def close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        # All at once: each session's upstreams may take their grace periods to stop.
        await asyncio.gather(*(self.discard(s) for s in list(self._sessions.values())))


def is_initialize(body: Any) -> bool:
    return isinstance(body, dict) and body.get("method") == methods.INITIALIZE and "id" in body
