"""Test scaffolding for the HTTP front: the conformance fixture as a real HTTP upstream process,
and an in-process gateway serving a real HTTP front on an ephemeral loopback port.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcpward.config.http_front import HttpFront
from mcpward.config.loader import parse_config
from mcpward.fronts.http.server import running_front
from mcpward.identity.tokens import hash_token
from mcpward.relay.gateway import Gateway
from tests.support import paths
from tests.support.paths import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "conformance_server.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for_port(port: int, proc: asyncio.subprocess.Process, timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if proc.returncode is not None:
            raise RuntimeError(f"fixture exited with {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def fixture_upstream(record_headers: Path | None = None) -> AsyncIterator[str]:
    """The conformance fixture server over Streamable HTTP; yields its MCP URL."""
    port = free_port()
    args = [str(FIXTURE), "--port", str(port)]
    if record_headers is not None:
        args += ["--record-headers", str(record_headers)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        await wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await stop_process(proc)


@contextlib.asynccontextmanager
async def everything_http_upstream() -> AsyncIterator[str]:
    """server-everything (handshake era only) over Streamable HTTP; yields its MCP URL."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        str(paths.node22()),
        str(paths.npm_bin(paths.SERVER_EVERYTHING)),
        "streamableHttp",
        env={"PATH": "/usr/bin:/bin", "PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await stop_process(proc)


async def stop_process(proc: asyncio.subprocess.Process, grace_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after `grace_s` (a hang guard)."""
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), grace_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def token_entry(
    token: str, client_id: str, ceiling: str = "full", roles: list[str] | None = None
) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "token_sha256": hash_token(token),
        "consent_ceiling": ceiling,
        "roles": roles or [],
    }


@contextlib.asynccontextmanager
async def gateway_front(
    upstreams: list[dict[str, Any]],
    state_dir: Path,
    front: dict[str, Any],
    guards: list[dict[str, Any]] | None = None,
) -> AsyncIterator[tuple[Gateway, str]]:
    """A gateway with an HTTP front on 127.0.0.1 (ephemeral port); yields (gateway, MCP URL)."""
    data: dict[str, Any] = {"upstreams": upstreams, "state_dir": str(state_dir)}
    if guards is not None:
        data["guards"] = {"replace_defaults": True, "list": guards}
    loaded = parse_config(data, "test")
    gateway = await Gateway.start(loaded)
    try:
        async with running_front(gateway, HttpFront(port=0, **front)) as url:
            yield gateway, url
    finally:
        await gateway.close()
