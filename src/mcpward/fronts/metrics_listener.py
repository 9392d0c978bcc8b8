"""stdio mode's `/metrics` listener (`mcpward run --metrics 127.0.0.1:PORT`): a small uvicorn
server on loopback unless the non-loopback address is explicitly acknowledged, and then only with
a bearer token (`telemetry.metrics_token`), which may also be asked for on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from mcpward.fronts.http.responses import Receive, Scope, Send, send_body, send_status
from mcpward.fronts.http.server import _Server
from mcpward.fronts.metrics_posture import MetricsListenerRefused, listen_address, metrics_token
from mcpward.telemetry.metrics import GatewayMetrics
from mcpward.telemetry.settings import TelemetrySettings

log = logging.getLogger("mcpward.metrics")

METRICS_PATH = "/metrics"
MAX_CONNECTIONS = 16  # a scraper needs one; the cap keeps a local client from piling them up


def _bearer(scope: Scope) -> bytes:
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return bytes(value[7:]).strip()
    return b""


class MetricsApp:
    """GET /metrics and nothing else; with a token, only to a request that bears it."""

    def __init__(self, metrics: GatewayMetrics, token: bytes | None = None) -> None:
        self.metrics = metrics
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] != METRICS_PATH:
            await send_status(send, 404, b"Not Found")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await send_status(send, 405, b"Method Not Allowed", [(b"allow", b"GET")])
            return
        if self.token is not None and not hmac.compare_digest(_bearer(scope), self.token):
            challenge = [(b"www-authenticate", b'Bearer realm="mcpward-metrics"')]
            await send_status(send, 401, b"Unauthorized", challenge)
            return
        body, content_type = await asyncio.to_thread(self.metrics.render)
        await send_body(send, 200, body, content_type.encode("ascii"))


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise MetricsListenerRefused(
            f"cannot listen for /metrics on {host}:{port}: {exc.strerror or exc}"
        ) from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def metrics_listener(
    settings: TelemetrySettings, metrics: GatewayMetrics
) -> AsyncIterator[str]:
    """Serve /metrics while the block runs; yields its URL."""
    host, port = listen_address(settings)
    token = metrics_token(settings)
    sock = _bind(host, port)
    config: Any = uvicorn.Config(
        MetricsApp(metrics, token),
        lifespan="off",
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=1,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise MetricsListenerRefused("the /metrics listener stopped while starting")
            await asyncio.sleep(0.01)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{bound}{METRICS_PATH}"
        log.info("metrics on %s", url)
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 3)
        sock.close()


@contextlib.asynccontextmanager
async def served_metrics(
    settings: TelemetrySettings, metrics: GatewayMetrics | None
) -> AsyncIterator[str | None]:
    """The listener when `telemetry.metrics_listen` is set (yields its URL), else nothing."""
    if settings.metrics_listen is None or metrics is None:
        yield None
        return
    async with metrics_listener(settings, metrics) as url:
        yield url
