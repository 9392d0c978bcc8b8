"""The connection guard under uvicorn's httptools protocol: what a peer can make the front hold
before a request reaches the app (and its authentication) is bounded in bytes, time and count.

- the request head: at most `max_head_bytes` are fed to the parser before the head is complete,
  and no header line (or the request target) is longer than `max_header_line_bytes`: 431 (414
  for the target) and the connection is closed;
- a head must be complete `header_timeout_s` after the connection opened or the request began
  (a silent or stalled peer is cut off: 408 if it had begun, else just closed); idle keep-alive
  connections are closed by uvicorn's `timeout_keep_alive`;
- at most `max_connections` connections are open at once: the next one gets 503 and is closed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("mcpward.http")
LINGER_S = 2.0  # how long a refused connection is read and dropped before it is closed

_REASONS = {
    408: b"Request Timeout",
    414: b"URI Too Long",
    431: b"Request Header Fields Too Large",
    503: b"Service Unavailable",
}


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_head_bytes: int
    max_header_line_bytes: int
    header_timeout_s: float
    max_connections: int


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits above (`guarded_protocol` sets `limits`)."""

    limits: ClassVar[ConnectionLimits]

    _head_open = True  # the parser waits for, or is inside, a request head
    _head_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None
    _refusal: int | None = None  # the status a parser callback refused the request with
    _lingering = False  # refused and half-closed: input is dropped until the close

    # ---- connection --------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            log.warning("HTTP front: %d connections open; refused one", len(self.connections) - 1)
            self._refuse(503, b"too many connections", (b"retry-after: 5\r\n",))
            return
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # refused: what the peer still sends is read and dropped, never parsed
        if not self._head_open:
            super().data_received(data)
            return
        room = self.limits.max_head_bytes - self._head_bytes
        if len(data) <= room:
            self._head_bytes += len(data)
            super().data_received(data)
            return
        # Feed only what fits: the head may end inside it (the rest is then body or the next
        # request); if it does not, the head is too large and nothing more of it is read.
        piece, rest = data[:room], data[room:]
        self._head_bytes += len(piece)
        if piece:
            super().data_received(piece)
        if self.transport.is_closing():
            return
        if self._head_open:
            self._refuse(431, b"request head too large")
            return
        self.data_received(rest)

    # ---- parser callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_open = True
        if self._head_timer is None:
            self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_header_line_bytes:
            self._refusal = 414
            raise ValueError("request target too long")  # the parser stops: send_400_response

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) + len(value) > self.limits.max_header_line_bytes:
            self._refusal = 431
            raise ValueError("header line too long")  # the parser stops: send_400_response
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._head_open, self._head_bytes = True, 0  # what follows is the next request's head
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        """The parser failed: on a callback's refusal, answer with that status instead."""
        if self._refusal is not None:
            self._refuse(self._refusal, _REASONS[self._refusal].lower())
            return
        self._cancel_head_timer()
        super().send_400_response(msg)

    # ---- helpers -------------------------------------------------------------------------------

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.limits.header_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._head_open:
            return
        if self._head_bytes:
            self._refuse(408, b"request head not received in time")
        else:
            self.transport.close()  # a silent connection: nothing to answer

    def _refuse(self, status: int, text: bytes, extra: tuple[bytes, ...] = ()) -> None:
        """Answer `status` and close (the head is not read any further)."""
        self._cancel_head_timer()
        self._head_open = False
        head = b"HTTP/1.1 %d %s\r\n" % (status, _REASONS[status])
        fields = [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(text),
            b"connection: close\r\n",
            *extra,
        ]
        self.transport.write(head + b"".join(fields) + b"\r\n" + text)
        # A lingering close: closing at once with the peer's bytes unread makes the kernel send
        # a reset, which can destroy the answer before the peer reads it. So send the answer
        # and our end of stream, drop what still comes for a moment (never parsed, never kept),
        # then close.
        self._lingering = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """The protocol class uvicorn builds per connection, bound to one front's limits."""
    return type("FrontHttpProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})
