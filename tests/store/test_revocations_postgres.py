"""Token revocations shared by a fleet on a real PostgreSQL: a token revoked with the CLI is
refused by every replica (each its own pool and listener) within a second, and a revocation a
replica did not hear of is read when its listener reconnects."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mcpward.identity.authenticator import Authenticator, AuthFailure
from mcpward.identity.consent import ConsentCeiling
from mcpward.identity.models import StaticToken
from mcpward.identity.tokens import hash_token, new_token
from mcpward.store.factory import Revocations, StoreContext, open_revocations
from tests.store.pg import pg_context, two_replicas

TOKEN = new_token()
ENTRY = StaticToken(
    client_id="agent", token_sha256=hash_token(TOKEN), consent_ceiling=ConsentCeiling.FULL
)


async def answer(auth: Authenticator) -> str:
    try:
        await auth.authenticate(f"Bearer {TOKEN}")
    except AuthFailure as exc:
        return f"{exc.status} {exc.description}"
    return "admitted"


async def until(auth: Authenticator, want: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while (seen := await answer(auth)) != want:
        assert time.monotonic() < deadline, f"still {seen!r}"
        await asyncio.sleep(0.01)


@pytest.fixture
def fleet(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[StoreContext, list[Revocations]]]:
    context = pg_context(pg_dsn, tmp_path)
    with two_replicas(context, open_revocations) as replicas:
        yield context, replicas


async def test_a_revoked_token_is_refused_by_every_replica_within_a_second(
    fleet: tuple[StoreContext, list[Revocations]],
) -> None:
    context, replicas = fleet
    auths = [Authenticator([ENTRY], revocations=r) for r in replicas]
    for auth in auths:
        assert await answer(auth) == "admitted"
    cli = open_revocations(context, listen=False)  # what `mcpward token revoke` opens
    try:
        assert cli.revoke(hash_token(TOKEN))
        assert not cli.revoke(hash_token(TOKEN))  # already revoked
        for auth in auths:
            await until(auth, "401 token revoked", 1.0)
        assert [subject for subject, _ in cli.subjects()] == [hash_token(TOKEN)]
    finally:
        cli.close()


async def test_a_revocation_missed_while_away_is_read_on_reconnect(
    fleet: tuple[StoreContext, list[Revocations]], pg_dsn: str
) -> None:
    _, replicas = fleet
    auth = Authenticator([ENTRY], revocations=replicas[0])
    assert await answer(auth) == "admitted"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        # revoked behind the fleet's back: no notification, so no replica re-reads for it
        conn.execute(
            "INSERT INTO token_revocations (subject, revoked_at, mac) VALUES (%s, %s, '')",
            (hash_token(TOKEN), time.time()),
        )
        assert await answer(auth) == "admitted"
        # every other connection to the database dropped: the listeners reconnect
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    # refused (503) from when the listener notices until it is back, then read on reconnect
    await until(auth, "401 token revoked", 20.0)
