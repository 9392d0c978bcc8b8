"""The review console under the HTTP front at `/console`, when `front.admin_token` is configured.

The front's Host/Origin policy applies to it first; its admin token is refused if it is also a
client token, and the MCP endpoint never accepts it (the authenticator knows client tokens only).
"""

from __future__ import annotations

from pathlib import Path

from mcpward.config.http_front import HttpFront, HttpFrontRefused
from mcpward.console.app import ConsoleSettings, create_console_app
from mcpward.console.auth import (
    AdminAuth,
    AdminTokenError,
    check_admin_token,
    check_not_a_client_token,
)
from mcpward.console.security import ASGIApp, Receive, Scope, Send
from mcpward.evidence.settings import EvidencePaths
from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.store.factory import StoreContext

CONSOLE_PATH = "/console"


def build_console(
    front: HttpFront, state_dir: Path, ledger: Path | None, store: StoreContext | None = None
) -> ASGIApp | None:
    """The console for this front over the gateway's state (`ledger`: evidence.path; `store`:
    the configured store, SQLite or the fleet's PostgreSQL), or None when no admin credential is
    configured."""
    if front.admin_token is None:
        return None
    if is_console_path(front.path):
        raise HttpFrontRefused(f"front.path {front.path!r} collides with the console at /console")
    try:
        token = check_admin_token(resolve_secret(front.admin_token), "front.admin_token")
        check_not_a_client_token(token, (t.token_sha256 for t in front.tokens))
    except (SecretUnavailable, AdminTokenError) as exc:
        raise HttpFrontRefused(f"front.admin_token: {exc}") from None
    evidence = EvidencePaths.resolve(state_dir, ledger, store=store)
    return create_console_app(ConsoleSettings(state_dir, evidence, AdminAuth(token), store=store))


def is_console_path(path: str) -> bool:
    return path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")


async def serve_console(console: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Hand a `/console...` request to the console with the ASGI root_path set."""
    path = scope["path"] if scope["path"] != CONSOLE_PATH else CONSOLE_PATH + "/"
    root = str(scope.get("root_path", "")) + CONSOLE_PATH
    await console({**scope, "path": path, "root_path": root}, receive, send)
