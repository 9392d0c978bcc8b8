"""Server-sent events framing: encoding events for the HTTP front and decoding them (with a size
cap that never buffers an oversized event) for the HTTP upstream connector.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class SseEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry_ms: int | None = None
    oversized: bool = False


def encode_event(data: bytes, event_id: str | None = None, event: str = "message") -> bytes:
    """One SSE frame. `data` is a single-line JSON text (our serialiser never emits newlines)."""
    out = b""
    if event_id is not None:
        out += b"id: " + event_id.encode("ascii") + b"\n"
    return out + b"event: " + event.encode("ascii") + b"\ndata: " + data + b"\n\n"


class SseDecoder:
    """Incremental decoder (WHATWG rules: `data` lines join with LF, a blank line dispatches).

    A line or event beyond `max_bytes` is dropped as it streams and reported once, as an event
    with `oversized=True`, so one huge event costs no more than `max_bytes` of memory.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self._buf = bytearray()
        self._skipping_line = False
        self._data: list[bytes] = []
        self._size = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._oversized = False
        self.last_event_id: str | None = None
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        events: list[SseEvent] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = False
        start = 0
        n = len(chunk)
        while start < n:
            cut = _next_eol(chunk, start)
            if cut < 0:
                self._append_partial(chunk[start:])
                break
            self._append_partial(chunk[start:cut])
            if chunk[cut] == 0x0D:
                if cut + 1 < n and chunk[cut + 1] == 0x0A:
                    cut += 1
                elif cut + 1 == n:
                    self._pending_cr = True
            line, skipped = bytes(self._buf), self._skipping_line
            self._buf.clear()
            self._skipping_line = False
            if skipped:
                self._mark_oversized()
            else:
                event = self._line(line)
                if event is not None:
                    events.append(event)
            start = cut + 1
        return events

    def _append_partial(self, piece: bytes) -> None:
        if self._skipping_line:
            return
        self._buf += piece
        if len(self._buf) > self._max + 64:
            self._skipping_line = True
            self._buf.clear()

    def _mark_oversized(self) -> None:
        self._oversized = True
        self._data.clear()

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return None
        name, sep, value = line.partition(b":")
        if sep and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            if self._oversized:
                return None
            self._size += len(value) + 1
            if self._size > self._max:
                self._mark_oversized()
                return None
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        if self._id is not None:
            self.last_event_id = self._id
        event: SseEvent | None = None
        if self._oversized:
            event = SseEvent(self._event or "message", "", self._id, self._retry, True)
        elif self._data:
            data = b"\n".join(self._data).decode("utf-8", "replace")
            event = SseEvent(self._event or "message", data, self._id, self._retry)
        elif self._retry is not None or self._id is not None:
            event = SseEvent(self._event or "message", "", self._id, self._retry)
        self._data = []
        self._size = 0
        self._event = ""
        self._id = None
        self._retry = None
        self._oversized = False
        return event


def _next_eol(chunk: bytes, start: int) -> int:
    lf = chunk.find(b"\n", start)
    cr = chunk.find(b"\r", start)
    if lf < 0:
        return cr
    if cr < 0:
        return lf
    return min(lf, cr)
