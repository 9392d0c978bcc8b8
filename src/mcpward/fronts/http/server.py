"""Runs the HTTP front on uvicorn: `serve_http(gateway, front)` until cancelled, and the options
of the quick form (`mcpward run --http ADDR --token-file FILE [--allow-non-loopback] -- CMD`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import uvicorn

from mcpward.config.http_front import HttpFront, HttpFrontRefused, check_posture, parse_http_address
from mcpward.fronts.http.app import HttpFrontApp
from mcpward.fronts.http.head_guard import ConnectionLimits, guarded_protocol
from mcpward.identity.authenticator import Authenticator
from mcpward.identity.client_records import ClientRecordsUnavailable
from mcpward.identity.consent import ConsentCeiling
from mcpward.identity.models import StaticToken
from mcpward.identity.oauth import JwksUnavailable
from mcpward.identity.revocations import RevocationUnavailable
from mcpward.identity.tokens import hash_token
from mcpward.relay.gateway import Gateway
from mcpward.store.clients import ClientRecords
from mcpward.store.factory import Revocations, open_client_records, open_revocations

log = logging.getLogger("mcpward.http")

QUICK_CLIENT_ID = "token-file"


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the gateway's runner owns shutdown."""

    def capture_signals(self) -> contextlib.AbstractContextManager[None]:  # type: ignore[override]
        return contextlib.nullcontext()


def _bind(front: HttpFront) -> socket.socket:
    family = socket.AF_INET6 if ":" in front.host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose protocol is
    # TCP, and without it every response pays Nagle plus the client's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((front.host, front.port))
    except OSError as exc:
        sock.close()
        raise HttpFrontRefused(
            f"cannot listen on {front.host}:{front.port}: {exc.strerror or exc}"
        ) from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def running_front(gateway: Gateway, front: HttpFront) -> AsyncIterator[str]:
    """Serve in the background while the block runs; yields the MCP endpoint URL."""
    check_posture(front)
    revocations = await asyncio.to_thread(_open_revocations, gateway)
    try:
        records = await asyncio.to_thread(_open_client_records, gateway)
    except HttpFrontRefused:
        if revocations is not None:
            revocations.close()
        raise
    authenticator = Authenticator(front.tokens, front.oauth, revocations, records)
    try:
        await authenticator.start()
    except JwksUnavailable as exc:
        for opened in (revocations, records):
            if opened is not None:
                opened.close()
        raise HttpFrontRefused(f"front.oauth: the JWKS cannot be read: {exc}") from None
    sock = _bind(front)
    port = sock.getsockname()[1]
    app = HttpFrontApp(gateway, front, authenticator, port)
    config = uvicorn.Config(
        app,
        lifespan="off",
        # The C parser: about 0.2 ms less per request than h11. (Writing a response's head and
        # body in one system call instead of two measured no gain: docs/performance.md.)
        # Guarded: the head is capped and timed, connections counted (head_guard.py).
        http=guarded_protocol(connection_limits(front)),
        # typed int by uvicorn; used as call_later's delay, so a float works
        timeout_keep_alive=front.keep_alive_timeout_s,  # type: ignore[arg-type]
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
        server_header=False,
        # X-Forwarded-* would let any client choose the address we log and see; never trusted.
        proxy_headers=False,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise HttpFrontRefused("the HTTP front stopped while starting")
        await asyncio.sleep(0.01)
    host = f"[{front.host}]" if ":" in front.host else front.host
    url = f"http://{host}:{port}{front.path}"
    log.info("HTTP front listening on %s", url)
    try:
        yield url
    finally:
        server.should_exit = True
        await app.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 5)
        sock.close()
        for opened in (revocations, records):
            if opened is not None:
                opened.close()


def connection_limits(front: HttpFront) -> ConnectionLimits:
    return ConnectionLimits(
        max_head_bytes=front.max_head_bytes,
        max_header_line_bytes=front.max_header_line_bytes,
        header_timeout_s=front.header_timeout_s,
        max_connections=front.max_connections,
    )


def _open_revocations(gateway: Gateway) -> Revocations | None:
    """The store's token revocations (shared by a fleet's replicas), checked on every request."""
    if gateway.store is None:
        return None
    try:
        return open_revocations(gateway.store)
    except RevocationUnavailable as exc:
        raise HttpFrontRefused(str(exc)) from None


def _open_client_records(gateway: Gateway) -> ClientRecords | None:
    """The store's client records (roles and ceilings that replace the config's), read on every
    request; a store that cannot give them refuses the start."""
    if gateway.store is None:
        return None
    try:
        return open_client_records(gateway.store)
    except ClientRecordsUnavailable as exc:
        raise HttpFrontRefused(str(exc)) from None


async def serve_http(
    gateway: Gateway,
    front: HttpFront,
    on_ready: Callable[[str], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until `stop` is set, or (without one) until SIGTERM, SIGINT or SIGHUP."""
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
    async with running_front(gateway, front) as url:
        if on_ready is not None:
            on_ready(url)
        await stop.wait()
        log.info("HTTP front shutting down")


def quick_front(http: str, token_file: Path | None, allow_non_loopback: bool) -> HttpFront:
    """The front of `mcpward run --http ADDR --token-file FILE -- CMD`: one client, full ceiling.

    The token file holds the bearer token itself (one line); only its hash is kept in memory.
    """
    if token_file is None:
        raise HttpFrontRefused(
            "--http refuses to start without a client credential: add --token-file FILE "
            "(a file holding the bearer token clients must present)"
        )
    try:
        mode = token_file.stat().st_mode & 0o777
        token = token_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise HttpFrontRefused(f"--token-file {token_file}: {exc.strerror or exc}") from None
    if mode & 0o077:  # as the console refuses its admin token file
        raise HttpFrontRefused(
            f"--token-file {token_file}: readable by group or others (mode {mode:o}); "
            f"run `chmod 600 {token_file}`"
        )
    if len(token) < 16:
        raise HttpFrontRefused(f"--token-file {token_file}: a token has at least 16 characters")
    host, port = parse_http_address(http)
    entry = StaticToken(
        client_id=QUICK_CLIENT_ID,
        token_sha256=hash_token(token),
        consent_ceiling=ConsentCeiling.FULL,
    )
    try:
        return HttpFront(
            host=host,
            port=port,
            tokens=[entry],
            allow_non_loopback=allow_non_loopback,
            allowed_hosts=[f"{host}:{port}"] if allow_non_loopback else [],
        )
    except ValueError as exc:
        raise HttpFrontRefused(_first_error(exc)) from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        for err in errors():
            message = str(err.get("msg", ""))
            return message.removeprefix("Value error, ")
    return str(exc)
