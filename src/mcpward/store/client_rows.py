"""Client records as table rows, the same in SQLite and PostgreSQL: roles as a JSON list (NULL:
the config's roles stand), the ceiling by name (NULL: the config's ceiling stands)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from mcpward.identity.ceilings import ConsentCeiling
from mcpward.identity.client_records import StoredRecord, check_client_id, check_roles

Row = tuple[str, str | None, str | None, float]  # client_id, roles, consent_ceiling, updated_at
COLUMNS = "client_id, roles, consent_ceiling, updated_at"


class Unset:
    """Marks a field a change leaves as it is."""


UNSET: Final[Unset] = Unset()
RolesChange = tuple[str, ...] | Unset | None  # None: the config's roles stand again
CeilingChange = ConsentCeiling | Unset | None


def encode(record: StoredRecord) -> Row:
    roles = None if record.roles is None else json.dumps(list(record.roles))
    ceiling = None if record.ceiling is None else record.ceiling.value
    return record.client_id, roles, ceiling, record.updated_at


def decode(row: tuple[Any, ...]) -> StoredRecord:
    """A stored row; ValueError when it is not one this code writes."""
    client_id, roles_text, ceiling_text, updated_at = row
    roles = None
    if roles_text is not None:
        value = json.loads(roles_text)
        if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
            raise ValueError("roles is not a list of names")
        roles = check_roles(value)
    ceiling = None if ceiling_text is None else ConsentCeiling(ceiling_text)
    return StoredRecord(check_client_id(str(client_id)), roles, ceiling, float(updated_at))


def changed(
    existing: StoredRecord | None,
    client_id: str,
    at: float,
    roles: RolesChange = UNSET,
    ceiling: CeilingChange = UNSET,
) -> StoredRecord | None:
    """The record after a change; None when no field is left set (the row goes away)."""
    record = existing or StoredRecord(client_id, None, None, at)
    fields: dict[str, Any] = {"updated_at": at}
    if not isinstance(roles, Unset):
        fields["roles"] = roles
    if not isinstance(ceiling, Unset):
        fields["ceiling"] = ceiling
    record = dataclasses.replace(record, **fields)
    return None if record.roles is None and record.ceiling is None else record
