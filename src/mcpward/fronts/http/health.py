"""`/healthz` (the process is up) and `/readyz` (store reachable, migrations current, upstreams
able to serve) for load balancers: no token, no Host check, and nothing but a fixed word.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcpward.fronts.http.responses import Scope, Send, send_status

if TYPE_CHECKING:
    from mcpward.relay.gateway import Gateway

log = logging.getLogger("mcpward.http")

HEALTH_PATHS = frozenset({"/healthz", "/readyz"})
# A store check returns None when the store can serve, else one of these words.
StoreCheck = Callable[[], "str | None"]
STORE_REASONS = frozenset({"store", "migrations"})
STORE_CHECK_TIMEOUT_S = 2.0


def state_dir_check(state_dir: Path) -> StoreCheck:
    """The embedded (SQLite) default: the state directory exists and is writable."""

    def check() -> str | None:
        return None if os.access(state_dir, os.W_OK | os.X_OK) else "store"

    return check


class HealthProbe:
    """Answers the two probe paths; the reason for not being ready is one fixed word."""

    def __init__(self, gateway: Gateway, store_check: StoreCheck | None = None) -> None:
        self.gateway = gateway
        self.store_check = store_check or state_dir_check(gateway.state_dir)
        self.closing = False

    async def serve(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_status(send, 405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        if scope["path"] == "/healthz":
            await send_status(send, 200, b"ok")
            return
        reason = await self.not_ready()
        if reason is None:
            await send_status(send, 200, b"ready")
        else:
            await send_status(send, 503, b"not ready: " + reason.encode("ascii"))

    async def not_ready(self) -> str | None:
        """None when ready, else `shutting_down`, `store`, `migrations` or `upstreams`."""
        if self.closing:
            return "shutting_down"
        try:
            word = await asyncio.wait_for(
                asyncio.to_thread(self.store_check), STORE_CHECK_TIMEOUT_S
            )
        except Exception as exc:
            log.warning("readiness: the store check failed: %s", type(exc).__name__)
            word = "store"
        if word is not None:
            return word if word in STORE_REASONS else "store"
        if not self.gateway.processes.ready():
            return "upstreams"
        return None
