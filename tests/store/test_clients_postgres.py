"""Client records shared by a fleet on a real PostgreSQL: two replicas (each its own pool and
listener) see a change made elsewhere within a second; an edited row refuses its client; records
that cannot be read refuse every client (fail closed) until they can be again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mcpward.identity.authenticator import Authenticator, AuthFailure, Principal
from mcpward.identity.consent import ConsentCeiling
from mcpward.identity.models import StaticToken
from mcpward.identity.tokens import hash_token, new_token
from mcpward.store.clients import ClientRecords
from mcpward.store.factory import StoreContext, open_client_records
from tests.store.pg import pg_context, two_replicas

TOKEN = new_token()
ENTRY = StaticToken(
    client_id="agent",
    token_sha256=hash_token(TOKEN),
    roles=["ops"],
    consent_ceiling=ConsentCeiling.FULL,
)


async def principal(auth: Authenticator) -> Principal:
    return await auth.authenticate(f"Bearer {TOKEN}")


async def within_a_second(auth: Authenticator, want: tuple[tuple[str, ...], str]) -> None:
    deadline = time.monotonic() + 1.0
    while True:
        try:
            p = await principal(auth)
            seen: object = (p.identity.roles, p.ceiling.value)
        except AuthFailure as exc:
            seen = exc.description
        if seen == want:
            return
        assert time.monotonic() < deadline, f"still {seen}"
        await asyncio.sleep(0.01)


def notify_change(dsn: str, sql: str) -> None:
    """An edit made directly in the database, then the notification replicas listen for."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.encode())
        conn.execute("SELECT pg_notify('mcpward_clients', '')")


@pytest.fixture
def fleet(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[StoreContext, list[ClientRecords]]]:
    context = pg_context(pg_dsn, tmp_path)
    with two_replicas(context, open_client_records) as replicas:
        yield context, replicas


async def test_a_lowered_ceiling_and_a_removed_role_reach_every_replica(
    fleet: tuple[StoreContext, list[ClientRecords]],
) -> None:
    context, replicas = fleet
    auths = [Authenticator([ENTRY], records=r) for r in replicas]
    for auth in auths:
        first = await principal(auth)
        assert (first.identity.roles, first.ceiling) == (("ops",), ConsentCeiling.FULL)
    cli = open_client_records(context, listen=False)  # what `mcpward clients` opens
    try:
        cli.change("agent", ceiling=ConsentCeiling.READ_ONLY)
        for auth in auths:
            await within_a_second(auth, (("ops",), "read_only"))
        cli.change("agent", roles=())
        for auth in auths:
            await within_a_second(auth, ((), "read_only"))
        assert cli.reset("agent")
        for auth in auths:
            await within_a_second(auth, (("ops",), "full"))
    finally:
        cli.close()


async def test_an_edited_row_refuses_its_client_and_is_not_restamped(
    fleet: tuple[StoreContext, list[ClientRecords]], pg_dsn: str
) -> None:
    context, replicas = fleet
    auth = Authenticator([ENTRY], records=replicas[0])
    cli = open_client_records(context, listen=False)
    try:
        cli.change("agent", ceiling=ConsentCeiling.READ_ONLY)
        cli.change("other", ceiling=ConsentCeiling.READ_ONLY)
        notify_change(
            pg_dsn, "UPDATE client_records SET consent_ceiling = 'full' WHERE client_id = 'agent'"
        )
        deadline = time.monotonic() + 1.0
        while True:
            try:
                await principal(auth)
            except AuthFailure as exc:
                assert exc.status == 401
                break
            assert time.monotonic() < deadline, "the edited record still admits its client"
            await asyncio.sleep(0.01)
        snapshot = replicas[1].snapshot()
        assert "fails its integrity check" in str(snapshot["agent"])
        assert not isinstance(snapshot["other"], str)  # only the edited client is refused
        with pytest.raises(Exception, match="integrity check"):
            cli.change("agent", roles=("ops",))  # a change never launders the edited row
        assert cli.reset("agent")
        await within_a_second(auth, (("ops",), "full"))
    finally:
        cli.close()


async def test_records_that_cannot_be_read_refuse_every_client_until_they_can(
    fleet: tuple[StoreContext, list[ClientRecords]], pg_dsn: str
) -> None:
    _, replicas = fleet
    auth = Authenticator([ENTRY], records=replicas[0])
    assert (await principal(auth)).ceiling is ConsentCeiling.FULL
    notify_change(pg_dsn, "ALTER TABLE client_records RENAME TO client_records_away")
    deadline = time.monotonic() + 1.0
    while True:
        try:
            await principal(auth)
        except AuthFailure as exc:
            assert exc.description == "client records cannot be read right now"
            break
        assert time.monotonic() < deadline, "unreadable records still admit the client"
        await asyncio.sleep(0.01)
    notify_change(pg_dsn, "ALTER TABLE client_records_away RENAME TO client_records")
    await within_a_second(auth, (("ops",), "full"))
