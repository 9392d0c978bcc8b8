"""What a connection can make the HTTP front hold before authentication is bounded: a huge
request head gets 431 without being read (the gateway's memory does not grow by its size), a
silent or stalled connection is closed, and a request that repeats Origin (or another header a
check reads one copy of) is refused. Raw sockets against a real `mcpward run` process.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.gateway_harness import free_port, stop_process, token_entry, wait_for_port
from tests.relay.conftest import echo_upstream
from tests.support.gateway import gateway_argv, write_gateway_config

TOKEN = "head-limits-token-0123456789ab"
HANG_GUARD_S = 30.0  # a hang guard, not a timing assertion
MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@contextlib.asynccontextmanager
async def http_gateway(
    tmp_path: Path, **limits: Any
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    port = free_port()
    front = {
        "kind": "http",
        "port": port,
        "tokens": [token_entry(TOKEN, "c")],
        "header_timeout_s": 1.0,
        "keep_alive_timeout_s": 1.0,
        **limits,
    }
    config = write_gateway_config(tmp_path, [echo_upstream("e")], guards=[], extra={"front": front})
    proc = await asyncio.create_subprocess_exec(
        *gateway_argv(config),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await wait_for_port(port, proc)
        yield proc, port
    finally:
        await stop_process(proc)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def read_all(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes (a reset after its answer counts as closed)."""
    data = b""
    with contextlib.suppress(ConnectionError):
        while chunk := await reader.read(65536):
            data += chunk
    return data


def head(port: int, *lines: str) -> bytes:
    fields = [f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {TOKEN}", *lines]
    return ("POST /mcp HTTP/1.1\r\n" + "".join(f"{f}\r\n" for f in fields)).encode()


async def test_a_huge_header_value_gets_431_and_is_not_held(tmp_path: Path) -> None:
    async with http_gateway(tmp_path) as (proc, port):
        before = rss_bytes(proc.pid)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answer = asyncio.create_task(read_all(reader))
        chunk = b"a" * MiB
        with contextlib.suppress(ConnectionError):
            writer.write(head(port) + b"X-Big: ")
            for _ in range(48):  # a 48 MiB header value
                writer.write(chunk)
                await asyncio.wait_for(writer.drain(), HANG_GUARD_S)
        data = await asyncio.wait_for(answer, HANG_GUARD_S)
        writer.close()
        assert data.startswith(b"HTTP/1.1 431 "), data[:200]
        grown = rss_bytes(proc.pid) - before
        assert grown < 24 * MiB, f"the gateway grew by {grown / MiB:.1f} MiB"


async def test_a_long_header_line_gets_431(tmp_path: Path) -> None:
    async with http_gateway(tmp_path) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head(port, "X-Long: " + "b" * 20_000) + b"\r\n")
        await writer.drain()
        data = await asyncio.wait_for(read_all(reader), HANG_GUARD_S)
        writer.close()
        assert data.startswith(b"HTTP/1.1 431 "), data[:200]


@pytest.mark.parametrize("sends", [b"", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1"])
async def test_a_silent_or_stalled_connection_is_closed(tmp_path: Path, sends: bytes) -> None:
    async with http_gateway(tmp_path) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(sends)
        await writer.drain()
        # the server closes it (header_timeout_s is 1 s here); the guard only stops a hang
        data = await asyncio.wait_for(read_all(reader), HANG_GUARD_S)
        writer.close()
        assert data == b"" if not sends else data.startswith(b"HTTP/1.1 408 "), data[:200]


async def test_a_body_that_stalls_gets_408(tmp_path: Path) -> None:
    async with http_gateway(tmp_path, body_timeout_s=1.0) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head(port, "Content-Type: application/json", "Content-Length: 100") + b"\r\n{")
        await writer.drain()
        # one byte of a 100-byte body, then nothing: answered 408 (the guard only stops a hang)
        data = await asyncio.wait_for(read_all(reader), HANG_GUARD_S)
        writer.close()
        assert data.startswith(b"HTTP/1.1 408 "), data[:200]


async def test_an_idle_keep_alive_connection_is_closed(tmp_path: Path) -> None:
    async with http_gateway(tmp_path) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        await writer.drain()
        data = await asyncio.wait_for(read_all(reader), HANG_GUARD_S)
        writer.close()
        assert data.startswith(b"HTTP/1.1 200 "), data[:200]


@pytest.mark.parametrize(
    ("lines", "status"),
    [
        (["Origin: http://evil.example", "Origin: http://127.0.0.1:{port}"], 403),
        (["Mcp-Session-Id: a", "Mcp-Session-Id: b"], 400),
        ([f"Authorization: Bearer {TOKEN}"], 400),
    ],
    ids=["origin", "session-id", "authorization"],
)
async def test_repeated_security_headers_are_refused(
    tmp_path: Path, lines: list[str], status: int
) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    async with http_gateway(tmp_path) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        extra = [line.replace("{port}", str(port)) for line in lines]
        request = head(
            port,
            *extra,
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"Content-Length: {len(body)}",
            "Connection: close",
        )
        writer.write(request + b"\r\n" + body)
        await writer.drain()
        data = await asyncio.wait_for(read_all(reader), HANG_GUARD_S)
        writer.close()
        assert data.startswith(f"HTTP/1.1 {status} ".encode()), data[:300]


async def test_connections_beyond_the_cap_get_503(tmp_path: Path) -> None:
    async with http_gateway(tmp_path, max_connections=2, header_timeout_s=60.0) as (_, port):
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        data = await asyncio.wait_for(read_all(reader), HANG_GUARD_S)
        assert data.startswith(b"HTTP/1.1 503 "), data[:200]
        assert b"retry-after: 5" in data.lower()
        for _, held_writer in held:
            held_writer.close()
        writer.close()
