"""One socket write per response where uvicorn makes two: its HTTP/1.1 protocol writes the status
line and headers, then the body, each straight to the socket. Each write is a system call, and on
loopback each can wake the client on its own. Here a connection's writes are held until the end
of the event-loop iteration that made them and then sent together, so a JSON answer (head and
body sent back to back) leaves in one write; an SSE stream's events still leave as they come.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class BatchedWrites:
    """A transport whose writes within one loop iteration go out as one write. Closing sends
    what is held first; everything else is the wrapped transport's."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if self._held is None:
            self._held = [bytes(data)]
            self._loop.call_soon(self.flush)
        else:
            self._held.append(bytes(data))

    def flush(self) -> None:
        held, self._held = self._held, None
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        held = sum(len(chunk) for chunk in self._held) if self._held else 0
        return held + self._transport.get_write_buffer_size()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class BatchedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, writing through BatchedWrites."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = BatchedWrites(transport, self.loop)  # type: ignore[assignment]
