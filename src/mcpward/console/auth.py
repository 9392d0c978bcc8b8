"""The console's admin credential: constant-time token checks, signed expiring session cookies
and CSRF tokens bound to the session. Client (MCP) tokens are never accepted here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mcpward.identity.tokens import hash_token

MIN_TOKEN_LENGTH = 24
MAX_TOKEN_LENGTH = 512
SESSION_COOKIE = "mcpward_console"
SESSION_TTL_S = 8 * 3600
ADMIN_OPERATOR = "admin"


class AdminTokenError(ValueError):
    """An admin token that cannot be used; the message says why."""


def check_admin_token(token: str, source: str) -> str:
    """Validate an admin token's shape (length, printable ASCII); return it."""
    if not MIN_TOKEN_LENGTH <= len(token) <= MAX_TOKEN_LENGTH:
        raise AdminTokenError(
            f"{source}: the admin token must be {MIN_TOKEN_LENGTH}..{MAX_TOKEN_LENGTH} characters "
            "(make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    if not all(33 <= ord(c) <= 126 for c in token):
        raise AdminTokenError(f"{source}: the admin token must be printable ASCII without spaces")
    return token


def check_not_a_client_token(token: str, client_token_hashes: Iterable[str]) -> None:
    """Refuse an admin token that is also a client (MCP) token: the two must never overlap."""
    if hash_token(token) in set(client_token_hashes):
        raise AdminTokenError(
            "the admin token is also a client token of the MCP endpoint; use a separate token"
        )


ADMIN_TOKEN_NAME = "console-admin.token"  # the default token file, in the state directory


def ensure_admin_token(path: Path) -> bool:
    """Make a fresh admin token at `path` (mode 600) unless one is there; True if made."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError as exc:
        raise AdminTokenError(f"{path}: cannot write an admin token: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(secrets.token_urlsafe(32) + "\n")
    return True


def read_admin_token_file(path: Path) -> str:
    """The token in `path` (one line); refused if unreadable, malformed or readable by others."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AdminTokenError(f"{path}: cannot read the admin token: {exc.strerror}") from None
    if mode & 0o077:
        raise AdminTokenError(f"{path}: readable by group or others; run `chmod 600 {path}`")
    return check_admin_token(text, str(path))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    session_id: str
    operator: str
    expires_at: float


class AdminAuth:
    """Checks the admin token and issues/reads session cookies signed with a per-process key
    (a console restart logs everyone out)."""

    def __init__(self, admin_token: str, *, ttl_s: float = SESSION_TTL_S) -> None:
        self._token_digest = _digest(admin_token)
        self._key = secrets.token_bytes(32)
        self.ttl_s = ttl_s

    @property
    def token_digest(self) -> bytes:
        """SHA-256 of the admin token (to refuse a client token equal to it)."""
        return self._token_digest

    def token_matches(self, presented: str | None) -> bool:
        """Constant-time comparison of SHA-256 digests (length does not leak either)."""
        if not presented or len(presented) > MAX_TOKEN_LENGTH:
            return False
        return hmac.compare_digest(_digest(presented), self._token_digest)

    def bearer_matches(self, authorization: str | None) -> bool:
        if not authorization:
            return False
        scheme, _, value = authorization.partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(value.strip())

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode("ascii"), hashlib.sha256).digest())

    def new_session(self, operator: str = ADMIN_OPERATOR, now: float | None = None) -> str:
        """A cookie value: `session_id.expiry.operator.signature`."""
        stamp = time.time() if now is None else now
        operator_b64 = _b64(operator.encode("utf-8"))
        payload = f"{secrets.token_urlsafe(18)}.{int(stamp + self.ttl_s)}.{operator_b64}"
        return f"{payload}.{self._sign(payload)}"

    def read_session(self, cookie: str | None, now: float | None = None) -> ConsoleSession | None:
        """The session a cookie carries, or None if absent, forged, malformed or expired."""
        if not cookie or len(cookie) > 512:
            return None
        payload, _, signature = cookie.rpartition(".")
        if not payload or not hmac.compare_digest(self._sign(payload), signature):
            return None
        parts = payload.split(".")
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        expires = float(parts[1])
        if expires < (time.time() if now is None else now):
            return None
        try:
            operator = _unb64(parts[2]).decode("utf-8")
        except ValueError:
            return None
        return ConsoleSession(parts[0], operator, expires)

    def csrf_token(self, session: ConsoleSession) -> str:
        """The CSRF token of a session (derived, so nothing is stored)."""
        return self._sign(f"csrf:{session.session_id}")

    def csrf_matches(self, session: ConsoleSession, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(self.csrf_token(session), presented or "")
