"""Static per-client bearer tokens: hashing, generation, and the constant-time lookup.

Config holds only `sha256:<hex>`; the token itself exists in the client and, once, on screen.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from mcpward.identity.models import StaticToken

TOKEN_BYTES = 32


def hash_token(token: str) -> str:
    """The form stored in config. Tokens are 256-bit random values, so a plain SHA-256 is enough:
    there is no password to brute-force."""
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return "mcpw_" + secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """A configured token: its digest, its entry, and `subject`, the `sha256:<hex>` form that
    names this very token in revocations (computed once, not per request)."""

    digest: bytes
    entry: StaticToken
    subject: str


class StaticTokenTable:
    """Looks a presented token up among the configured hashes without an early exit."""

    def __init__(self, entries: Sequence[StaticToken]) -> None:
        self._entries: list[TokenEntry] = []
        seen: set[bytes] = set()
        for entry in entries:
            digest = bytes.fromhex(entry.token_sha256[7:])
            if digest in seen:
                raise ValueError(f"client {entry.client_id!r} reuses another client's token")
            seen.add(digest)
            self._entries.append(TokenEntry(digest, entry, "sha256:" + digest.hex()))

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, token: str) -> TokenEntry | None:
        presented = hashlib.sha256(token.encode("utf-8")).digest()
        found: TokenEntry | None = None
        for candidate in self._entries:
            # Compare against every entry so the time taken does not say which one matched.
            if hmac.compare_digest(presented, candidate.digest):
                found = candidate
        return found

    def match(self, token: str) -> StaticToken | None:
        found = self.lookup(token)
        return None if found is None else found.entry
