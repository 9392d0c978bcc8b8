"""`GET /metrics` on the HTTP front: the gateway's metrics, to the admin credential only.

Served only when `front.admin_token` is set (404 otherwise); a client token is refused like no
token (401). The console's AdminAuth does the constant-time check.
"""

from __future__ import annotations

import asyncio

from mcpward.config.http_front import HttpFront, HttpFrontRefused
from mcpward.console.auth import (
    AdminAuth,
    AdminTokenError,
    check_admin_token,
    check_not_a_client_token,
)
from mcpward.fronts.http.responses import Scope, Send, send_body, send_status
from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.telemetry.metrics import GatewayMetrics

METRICS_PATH = "/metrics"
_CHALLENGE = [(b"www-authenticate", b'Bearer realm="mcpward-admin"')]


def admin_auth(front: HttpFront) -> AdminAuth | None:
    """The admin credential's checker, or None when the front has none."""
    if front.admin_token is None:
        return None
    try:
        token = check_admin_token(resolve_secret(front.admin_token), "front.admin_token")
        check_not_a_client_token(token, (t.token_sha256 for t in front.tokens))
    except (SecretUnavailable, AdminTokenError) as exc:
        raise HttpFrontRefused(f"front.admin_token: {exc}") from None
    return AdminAuth(token)


class MetricsEndpoint:
    """Answers GET /metrics to a request bearing the admin token."""

    def __init__(self, metrics: GatewayMetrics, auth: AdminAuth) -> None:
        self.metrics = metrics
        self.auth = auth

    @classmethod
    def for_front(cls, front: HttpFront, metrics: GatewayMetrics | None) -> MetricsEndpoint | None:
        if front.path.rstrip("/") == METRICS_PATH:
            if front.admin_token is not None:
                raise HttpFrontRefused(f"front.path {front.path!r} collides with /metrics")
            return None
        auth = admin_auth(front)
        if auth is None or metrics is None:
            return None
        return cls(metrics, auth)

    async def serve(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_status(send, 405, b"Method Not Allowed", [(b"allow", b"GET")])
            return
        values = [v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"]
        if len(values) != 1 or not self.auth.bearer_matches(values[0]):
            await send_status(
                send, 401, b"Unauthorized: /metrics needs the admin token", _CHALLENGE
            )
            return
        body, content_type = await asyncio.to_thread(self.metrics.render)
        await send_body(
            send, 200, body, content_type.encode("ascii"), [(b"cache-control", b"no-store")]
        )
