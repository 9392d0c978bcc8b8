"""Revoked client credentials: what the authenticator asks before it admits a token.

A subject is a client id, or `sha256:<hex>` of one token. The stores (SQLite for one box,
PostgreSQL for a fleet) implement `RevocationSet`; a fleet's replicas see a revocation within 1 s.
"""

from __future__ import annotations

import re
from typing import Protocol

_SHA = re.compile(r"^sha256:[0-9a-f]{64}$")
_CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$")


class RevocationUnavailable(Exception):
    """The revocation list cannot be read right now (the request is refused: fail closed)."""


class RevocationSet(Protocol):
    def revoked(self, client_id: str | None, token_sha256: str) -> bool:
        """True if this client, or this very token, is revoked. Raises RevocationUnavailable."""
        ...


def parse_subject(value: str) -> str:
    """A client id or `sha256:<64 hex>`, as given to `mcpward token revoke`; ValueError if not."""
    value = value.strip()
    if value.startswith("sha256:"):
        if not _SHA.match(value.lower()):
            raise ValueError("a token hash is sha256: followed by 64 hex digits")
        return value.lower()
    if not _CLIENT_ID.match(value):
        raise ValueError(f"{value!r} is neither a client id nor sha256:<hex>")
    return value
