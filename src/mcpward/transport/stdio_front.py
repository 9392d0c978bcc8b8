"""The stdio front: the client speaks MCP on our stdin/stdout; nothing else ever touches stdout.

At start fd 1 is moved aside for frames and pointed at stderr, so stray prints cannot corrupt
the wire. SIGTERM/SIGINT and stdin EOF all lead to the same clean shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import threading
from typing import Any

from mcpward.pipeline.context import Identity
from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.jsonrpc import FrameError, Message, RequestId
from mcpward.relay.gateway import Gateway
from mcpward.transport.framing import FrameReader, OversizedFrame, stream_limit
from mcpward.transport.write_batch import WriteBatch

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
        data = jsonrpc.dumps(message)
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
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


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


async def serve_stdio(gateway: Gateway, identity: Identity | None = None) -> None:
    """Serve one client on stdin/stdout until EOF or a termination signal."""
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
            if isinstance(frame, OversizedFrame):
                await downstream.send(
                    jsonrpc.error(
                        frame.peeked_id,
                        errors.INVALID_REQUEST,
                        f"frame of at least {frame.size_at_least} bytes exceeds the limit of "
                        f"{max_bytes} bytes; refused",
                    ),
                    None,
                )
                continue
            try:
                parsed = jsonrpc.parse_frame(frame)
            except FrameError as exc:
                await downstream.send(jsonrpc.error(exc.request_id, exc.code, exc.message), None)
                continue
            await session.handle(parsed)

    reading = asyncio.create_task(read_loop())
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        reason = "signal" if stop.is_set() else "end of input"
        if not stop.is_set():
            # The client closed its input: answer what it already asked (bounded), then stop.
            await session.drain(gateway.settings.request_timeout_s)
        log.info("shutting down (%s)", reason)
        for task in (reading, stopping):
            task.cancel()
        await _settle(reading)
        await gateway.close_session(session)
        with contextlib.suppress(Exception):
            await writer.drain()
        writer.close()


async def _settle(task: asyncio.Task[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
