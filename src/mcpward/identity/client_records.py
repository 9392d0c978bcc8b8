"""Client records kept in the store: per client id, roles and/or a consent ceiling that replace
what the config file says for that client, so a fleet changes them without a restart.

Precedence: the config file (`front.tokens`, `front.oauth.clients`) is the seed; a stored field,
when set, replaces the config's field for that client id (roles and ceiling separately; a field
left unset keeps the config's value). `mcpward clients reset ID` drops the stored record. The
stores (SQLite for one box, PostgreSQL for a fleet) implement `ClientRecordSet`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mcpward.identity.ceilings import ConsentCeiling
from mcpward.identity.models import CLIENT_ID, OAuthSettings, StaticToken, check_role_names

_CLIENT_ID = re.compile(CLIENT_ID)
MAX_ROLES = 64


class ClientRecordsUnavailable(Exception):
    """The records cannot be read right now: every client that needs them is refused."""


class ClientRecordRefused(ClientRecordsUnavailable):
    """This client's own record is unreadable or fails its integrity check: it is refused until
    `mcpward clients reset` (not an outage: retrying will not help)."""


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """What the store holds for one client id; None fields keep the config's value."""

    client_id: str
    roles: tuple[str, ...] | None
    ceiling: ConsentCeiling | None
    updated_at: float

    def apply(
        self, roles: Sequence[str], ceiling: ConsentCeiling
    ) -> tuple[tuple[str, ...], ConsentCeiling]:
        """The client's effective (roles, ceiling), given what the config records for it."""
        return (
            tuple(roles) if self.roles is None else self.roles,
            ceiling if self.ceiling is None else self.ceiling,
        )


class ClientRecordSet(Protocol):
    def record(self, client_id: str) -> StoredRecord | None:
        """The stored record of this client, or None. Raises ClientRecordsUnavailable."""
        ...


def check_client_id(value: str) -> str:
    if not _CLIENT_ID.match(value):
        raise ValueError(f"{value!r} is not a client id (it must match {CLIENT_ID})")
    return value


def check_roles(values: Sequence[str]) -> tuple[str, ...]:
    """Roles as given to `mcpward clients set-roles`: valid names, no duplicates, at most 64."""
    roles = list(dict.fromkeys(values))
    if len(roles) > MAX_ROLES:
        raise ValueError(f"at most {MAX_ROLES} roles per client")
    return tuple(check_role_names(roles))


def configured(
    tokens: Sequence[StaticToken], oauth: OAuthSettings | None
) -> dict[str, tuple[tuple[str, ...], ConsentCeiling]]:
    """What the config file records per client id (static tokens, then OAuth clients)."""
    found: dict[str, tuple[tuple[str, ...], ConsentCeiling]] = {}
    if oauth is not None:
        for client_id, entry in oauth.clients.items():
            found[client_id] = (tuple(entry.roles), entry.consent_ceiling)
    for token in tokens:
        found[token.client_id] = (tuple(token.roles), token.consent_ceiling)
    return found
