"""Static per-client bearer tokens: hashing, generation, and the constant-time lookup.

Config holds only `sha256:<hex>`; the token itself exists in the client and, once, on screen.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence

from mcpward.identity.models import StaticToken

TOKEN_BYTES = 32


def hash_token(token: str) -> str:
    """The form stored in config. Tokens are 256-bit random values, so a plain SHA-256 is enough:
    there is no password to brute-force."""
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return "mcpw_" + secrets.token_urlsafe(TOKEN_BYTES)


class StaticTokenTable:
    """Looks a presented token up among the configured hashes without an early exit."""

    def __init__(self, entries: Sequence[StaticToken]) -> None:
        self._entries = [(bytes.fromhex(e.token_sha256[7:]), e) for e in entries]
        seen: set[bytes] = set()
        for digest, entry in self._entries:
            if digest in seen:
                raise ValueError(f"client {entry.client_id!r} reuses another client's token")
            seen.add(digest)

    def __len__(self) -> int:
        return len(self._entries)

    def match(self, token: str) -> StaticToken | None:
        presented = hashlib.sha256(token.encode("utf-8")).digest()
        found: StaticToken | None = None
        for digest, entry in self._entries:
            # Compare against every entry so the time taken does not say which one matched.
            if hmac.compare_digest(presented, digest):
                found = entry
        return found
