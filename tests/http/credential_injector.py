"""A loopback TCP relay that adds `Authorization: Bearer <token>` to every HTTP/1.1 request head
and passes everything else through byte for byte (Host and Origin included).

The conformance harness and other tools that cannot send a credential reach the gateway's
authenticated front through it; the gateway lists the relay's address in `allowed_hosts`, the
way it would list a reverse proxy's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _forward_body(
    head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    lowered = head.lower()
    if b"\r\ntransfer-encoding: chunked" in lowered:
        while True:
            size_line = await reader.readuntil(b"\r\n")
            writer.write(size_line)
            size = int(size_line.split(b";")[0].strip(), 16)
            writer.write(await reader.readexactly(size + 2))
            if size == 0:
                return
    for line in lowered.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            writer.write(await reader.readexactly(int(line.split(b":", 1)[1].strip())))
            return


class CredentialInjector:
    """Relays 127.0.0.1:<port> to 127.0.0.1:<target_port> (set before the first connection)."""

    def __init__(self, token: str) -> None:
        self._auth = f"Authorization: Bearer {token}\r\n".encode()
        self.port = 0
        self.target_port = 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        back = asyncio.create_task(_pipe(up_reader, writer))
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, _, rest = head.partition(b"\r\n")
                up_writer.write(request_line + b"\r\n" + self._auth + rest)
                await _forward_body(head, reader, up_writer)
                await up_writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()
            await asyncio.wait({back}, timeout=5)
            back.cancel()


@contextlib.asynccontextmanager
async def credential_injector(token: str) -> AsyncIterator[CredentialInjector]:
    """Listen on 127.0.0.1 (ephemeral port); set `.target_port` before clients connect."""
    injector = CredentialInjector(token)
    server = await asyncio.start_server(injector._handle, "127.0.0.1", 0)
    injector.port = server.sockets[0].getsockname()[1]
    try:
        yield injector
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)
