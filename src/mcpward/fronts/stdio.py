"""The stdio front: the client speaks MCP on our stdin/stdout; nothing else ever touches stdout.

At start fd 1 is moved aside for frames and pointed at stderr, so stray prints cannot corrupt
the wire. SIGTERM/SIGINT and stdin EOF all lead to the same clean shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import stat
import threading
from typing import Any

from mcpward.fronts.client_drops import note_dropped
from mcpward.pipeline.context import Identity
from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.jsonrpc import FrameError, FrameKind, Message, RequestId
from mcpward.protocol.outgoing import encode_outgoing
from mcpward.relay.gateway import Gateway
from mcpward.streams.framing import FrameReader, OversizedFrame, stream_limit
from mcpward.streams.write_batch import WriteBatch

log = logging.getLogger("mcpward.stdio")


class FileWriter:
    """stdout redirected to a regular file: the event loop's pipe transports refuse (uvloop
    aborts the process on) a regular file, and a local file write does not block for long,
    so frames are written directly."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._batch = WriteBatch(self._write_all)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def write(self, data: bytes) -> None:
        self._batch.write(data)

    def buffered(self) -> int:
        return self._batch.pending_bytes

    async def drain(self) -> None:
        self._batch.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._batch.flush()
            os.close(self._fd)


class PipeWriter:
    """stdout is a pipe, socket or terminal: an asyncio stream with flow control."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._batch = WriteBatch(writer.write)

    def write(self, data: bytes) -> None:
        self._batch.write(data)

    def buffered(self) -> int:
        return self._writer.transport.get_write_buffer_size() + self._batch.pending_bytes

    async def drain(self) -> None:
        self._batch.flush()
        await self._writer.drain()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the client may be gone: nothing to flush to
            self._batch.flush()
        self._writer.close()


class StdioDownstream:
    """Writes frames to the real stdout, refusing any frame over the size cap."""

    def __init__(self, writer: FileWriter | PipeWriter, max_frame_bytes: int) -> None:
        self._writer = writer
        self._max = max_frame_bytes

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        encoded = encode_outgoing(message)
        if encoded is None:
            return
        message, data = encoded
        if len(data) > self._max:
            log.warning(
                "a %d-byte frame to the client exceeds %d bytes; refused", len(data), self._max
            )
            if "id" not in message or "method" in message:
                return
            data = jsonrpc.dumps(
                jsonrpc.error(
                    message["id"],
                    errors.UPSTREAM_UNAVAILABLE,
                    f"the answer exceeds the frame limit of {self._max} bytes",
                    {"reason": "frame_too_large"},
                )
            )
        self._writer.write(data + b"\n")
        if self._writer.buffered() > 65536:
            await self._writer.drain()


def _is_streamable(fd: int) -> bool:
    """A pipe, a socket or a terminal: what the event loop's pipe transports take. Any other
    character device (/dev/null, say) is treated as a file: uvloop aborts the process on it."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    return stat.S_ISCHR(mode) and os.isatty(fd)


async def _open_stdin(limit: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    in_fd = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    reader = asyncio.StreamReader(limit=limit)
    if _is_streamable(in_fd):
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda: protocol, os.fdopen(in_fd, "rb", buffering=0))
        return reader

    def pump() -> None:  # a regular file on stdin: read it in a thread
        with os.fdopen(in_fd, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, daemon=True).start()
    return reader


async def _open_stdout() -> FileWriter | PipeWriter:
    loop = asyncio.get_running_loop()
    out_fd = os.dup(1)
    os.dup2(2, 1)  # from now on, print() lands on stderr, never on the wire
    if not _is_streamable(out_fd):
        return FileWriter(out_fd)
    pipe = os.fdopen(out_fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), pipe
    )
    return PipeWriter(asyncio.StreamWriter(transport, protocol, None, loop))


class StdioFrontFailed(Exception):
    """The stdio front stopped for a reason other than end of input or a signal (it was logged);
    `mcpward run` exits non-zero on it."""


async def serve_stdio(gateway: Gateway, identity: Identity | None = None) -> None:
    """Serve one client on stdin/stdout until EOF or a termination signal.

    One bad frame never ends the loop (frame_failed); a failure of the loop itself (reading
    stdin) is logged and raised as StdioFrontFailed after the same clean shutdown.
    """
    max_bytes = gateway.settings.max_frame_bytes
    reader = await _open_stdin(stream_limit(max_bytes))
    writer = await _open_stdout()
    downstream = StdioDownstream(writer, max_bytes)
    session = await gateway.open_session(downstream, identity, None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    async def read_loop() -> None:
        frames = FrameReader(reader, max_bytes)
        while True:
            frame = await frames.next()
            if frame is None:
                return
            try:
                await take_frame(frame)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await frame_failed(frame, exc)

    async def take_frame(frame: bytes | OversizedFrame) -> None:
        if isinstance(frame, OversizedFrame):
            await refuse_oversized(frame)
            return
        try:
            parsed = jsonrpc.parse_frame(frame)
        except FrameError as exc:
            if exc.notification:
                note_dropped("bad-notification", "notification", exc.message)
                return
            await downstream.send(jsonrpc.error(exc.request_id, exc.code, exc.message), None)
            return
        await session.handle(parsed)

    async def refuse_oversized(frame: OversizedFrame) -> None:
        message = (
            f"frame of at least {frame.size_at_least} bytes exceeds the limit of "
            f"{max_bytes} bytes; refused"
        )
        if frame.request_id is None:  # a notification, or an id we cannot read exactly
            note_dropped("oversized", "frame", message)
            return
        await downstream.send(
            jsonrpc.error(frame.request_id, errors.INVALID_REQUEST, message), None
        )

    async def frame_failed(frame: bytes | OversizedFrame, exc: Exception) -> None:
        # A bug met by one frame fails that frame closed; the loop reads on. The body is not logged.
        incident = secrets.token_hex(6)
        log.error(
            "internal error %s handling a client frame (%s); failed closed",
            incident,
            type(exc).__name__,
        )
        request_id = _request_id_of(frame)
        if request_id is None:
            return
        with contextlib.suppress(Exception):  # the client may be gone: nothing to answer
            await downstream.send(
                jsonrpc.error(
                    request_id,
                    errors.GATEWAY_INTERNAL,
                    f"internal error in mcpward (incident {incident}); failed closed",
                    {"incident": incident},
                ),
                None,
            )

    reading = asyncio.create_task(read_loop())
    stopping = asyncio.create_task(stop.wait())
    failure: BaseException | None = None
    try:
        await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if reading.done() and not reading.cancelled():
            failure = reading.exception()
        if failure is not None:
            reason = f"the read loop failed: {type(failure).__name__}"
            log.error("stdio front: %s", reason, exc_info=failure)
        else:
            reason = "signal" if stop.is_set() else "end of input"
        if not stop.is_set():
            # The client closed its input: answer what it already asked (bounded), then stop.
            await session.drain(gateway.settings.request_timeout_s)
        log.info("shutting down (%s)", reason)
        for task in (reading, stopping):
            task.cancel()
        late = await _settle(reading)
        if failure is None and late is not None:
            failure = late
            reason = f"the read loop failed while stopping: {type(late).__name__}"
            log.error("stdio front: %s", reason)
        await gateway.close_session(session)
        with contextlib.suppress(Exception):
            await writer.drain()
        writer.close()
    if failure is not None:
        raise StdioFrontFailed(reason)


def _request_id_of(frame: bytes | OversizedFrame) -> RequestId | None:
    """The id of the request this frame is, if it can be read safely (else None)."""
    if isinstance(frame, OversizedFrame):
        return frame.request_id
    try:
        parsed = jsonrpc.parse_frame(frame)
    except Exception:
        return None
    return parsed.id if parsed.kind is FrameKind.REQUEST else None


async def _settle(task: asyncio.Task[Any]) -> BaseException | None:
    """Wait for a cancelled task; return its failure (not the cancellation): never lose it."""
    try:
        await task
    except asyncio.CancelledError:
        return None
    except Exception as exc:
        return exc
    return None
