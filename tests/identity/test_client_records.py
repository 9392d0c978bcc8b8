"""Stored client records over the config's: what replaces what, the session binding that moves
with the record, and refusal (fail closed) when the records cannot be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpward.identity.authenticator import Authenticator, AuthFailure
from mcpward.identity.client_records import (
    ClientRecordsUnavailable,
    StoredRecord,
    check_roles,
    configured,
)
from mcpward.identity.consent import CEILING_CLAIM, ConsentCeiling
from mcpward.identity.models import ClientRecord, OAuthSettings, StaticToken
from mcpward.identity.tokens import hash_token, new_token
from tests.http.jwt_issuer import ISSUER, RESOURCE, TestIssuer

TOKEN = new_token()
ALICE = StaticToken(
    client_id="alice",
    token_sha256=hash_token(TOKEN),
    roles=["dev", "ops"],
    consent_ceiling=ConsentCeiling.FULL,
)


class Records:
    """An in-memory ClientRecordSet: the identity layer's side of the contract."""

    def __init__(self) -> None:
        self.stored: dict[str, StoredRecord] = {}
        self.broken = False

    def record(self, client_id: str) -> StoredRecord | None:
        if self.broken:
            raise ClientRecordsUnavailable("client records: the database is not reachable")
        return self.stored.get(client_id)


def test_a_stored_field_replaces_the_configs_and_an_unset_one_keeps_it() -> None:
    roles, ceiling = ("dev",), ConsentCeiling.FULL
    only_ceiling = StoredRecord("c", None, ConsentCeiling.READ_ONLY, 0.0)
    assert only_ceiling.apply(roles, ceiling) == (("dev",), ConsentCeiling.READ_ONLY)
    no_roles = StoredRecord("c", (), None, 0.0)
    assert no_roles.apply(roles, ceiling) == ((), ConsentCeiling.FULL)
    wider = StoredRecord("c", ("admin",), ConsentCeiling.FULL, 0.0)
    assert wider.apply((), ConsentCeiling.READ_ONLY) == (("admin",), ConsentCeiling.FULL)


def test_roles_are_checked_and_deduplicated() -> None:
    assert check_roles(["a", "b", "a"]) == ("a", "b")
    with pytest.raises(ValueError, match="must match"):
        check_roles(["no spaces"])
    with pytest.raises(ValueError, match="at most 64"):
        check_roles([f"r{i}" for i in range(65)])


async def test_static_token_takes_its_stored_record_and_the_binding_moves() -> None:
    records = Records()
    auth = Authenticator([ALICE], records=records)
    before = await auth.authenticate(f"Bearer {TOKEN}")
    assert before.identity.roles == ("dev", "ops") and before.ceiling is ConsentCeiling.FULL

    records.stored["alice"] = StoredRecord("alice", ("dev",), ConsentCeiling.READ_ONLY, 1.0)
    after = await auth.authenticate(f"Bearer {TOKEN}")
    assert after.identity.roles == ("dev",)
    assert after.ceiling is ConsentCeiling.READ_ONLY
    assert after.identity.claims[CEILING_CLAIM] == "read_only"
    # a session opened under the old record is not this principal's any more
    assert after.binding != before.binding and TOKEN not in after.binding

    records.stored.clear()
    assert (await auth.authenticate(f"Bearer {TOKEN}")).binding == before.binding


async def test_unreadable_records_refuse_the_client() -> None:
    records = Records()
    records.broken = True
    auth = Authenticator([ALICE], records=records)
    with pytest.raises(AuthFailure) as info:
        await auth.authenticate(f"Bearer {TOKEN}")
    assert info.value.status == 503  # unavailable, not "log in again"
    assert info.value.description == "client records cannot be read right now"


async def test_oauth_client_record_replaced_token_roles_kept(tmp_path: Path) -> None:
    issuer = TestIssuer()
    settings = OAuthSettings(
        issuer=ISSUER,
        resource=RESOURCE,
        jwks_file=issuer.write_jwks(tmp_path / "jwks.json"),
        roles_claim="roles",
        clients={"ide-1": ClientRecord(roles=["dev"], consent_ceiling=ConsentCeiling.FULL)},
    )
    records = Records()
    auth = Authenticator([], settings, records=records)
    token = issuer.token(roles=["from-token"])
    first = await auth.authenticate(f"Bearer {token}")
    assert first.identity.roles == ("dev", "from-token") and first.ceiling is ConsentCeiling.FULL

    records.stored["ide-1"] = StoredRecord("ide-1", ("ops",), ConsentCeiling.NO_DESTRUCTIVE, 1.0)
    second = await auth.authenticate(f"Bearer {token}")
    assert second.identity.roles == ("ops", "from-token")
    assert second.ceiling is ConsentCeiling.NO_DESTRUCTIVE
    assert second.binding != first.binding

    # a client id the config does not list starts from the default ceiling; a record raises it
    records.stored["ide-2"] = StoredRecord("ide-2", None, ConsentCeiling.FULL, 1.0)
    other = await auth.authenticate(f"Bearer {issuer.token(client_id='ide-2')}")
    assert other.ceiling is ConsentCeiling.FULL and other.identity.roles == ()


def test_configured_lists_tokens_and_oauth_clients(tmp_path: Path) -> None:
    settings = OAuthSettings(
        issuer=ISSUER,
        resource=RESOURCE,
        jwks_file=tmp_path / "jwks.json",
        clients={"ide-1": ClientRecord(consent_ceiling=ConsentCeiling.READ_ONLY)},
    )
    assert configured([ALICE], settings) == {
        "alice": (("dev", "ops"), ConsentCeiling.FULL),
        "ide-1": ((), ConsentCeiling.READ_ONLY),
    }
