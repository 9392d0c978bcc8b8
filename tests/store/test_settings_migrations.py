"""The `store:` config section and the migration runner against a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from mcpward.contracts.store import PinStoreError
from mcpward.store.factory import open_pin_store, readiness_check, store_ready
from mcpward.store.postgres.migrations import applied_version, code_version, migrate
from mcpward.store.postgres.pool import acquire_pool, release_pool
from mcpward.store.settings import StoreSettings
from tests.store.pg import pg_context


def test_store_settings_refuse_a_password_in_the_file_and_a_missing_dsn() -> None:
    with pytest.raises(ValidationError, match="holds a password"):
        StoreSettings(kind="postgres", dsn="postgresql://u:secret@db/x")
    with pytest.raises(ValidationError, match=r"needs store\.dsn"):
        StoreSettings(kind="postgres")
    with pytest.raises(ValidationError, match="only used with"):
        StoreSettings(dsn="host=db dbname=x")
    with pytest.raises(ValidationError, match="smaller than"):
        StoreSettings(kind="postgres", dsn="host=db", pool={"min": 4, "max": 2})
    ok = StoreSettings.model_validate({"kind": "postgres", "dsn": {"env": "PG"}})
    assert ok.pool.min == 2 and ok.pool.max == 16


def test_migrate_applies_every_version_once_and_the_store_checks_it(
    pg_dsn: str, tmp_path: Path
) -> None:
    context = pg_context(pg_dsn, tmp_path, migrated=False)
    # an empty database: the replica refuses to start and says which command to run
    with pytest.raises(PinStoreError) as raised:
        open_pin_store(context)
    assert f"run: mcpward store migrate --config {tmp_path / 'mcpward.yaml'}" in str(raised.value)
    assert "schema is at version 0" in (store_ready(context) or "")
    assert readiness_check(context)() == "migrations"  # all /readyz reveals

    pool = acquire_pool(context.settings)
    try:
        applied = migrate(pool)
        assert [m.version for m in applied] == list(range(1, code_version() + 1))
        assert migrate(pool) == []  # idempotent
        with pool.connection() as conn:
            assert applied_version(conn) == code_version()
        assert store_ready(context) is None and readiness_check(context)() is None
        open_pin_store(context).close()
        # a schema newer than the code: refused, with the reason
        with pool.connection() as conn:
            conn.execute(
                "INSERT INTO mcpward_schema (version, name) VALUES (%s, 'future')",
                (code_version() + 1,),
            )
        with pytest.raises(PinStoreError, match="newer than this mcpward"):
            open_pin_store(context)
    finally:
        release_pool(pool)


def test_a_database_that_is_down_is_a_clear_store_error(tmp_path: Path) -> None:
    from tests.support.postgres import free_port

    dead = f"postgresql://nobody@127.0.0.1:{free_port()}/none"
    context = pg_context(dead, tmp_path, migrated=False)
    reason = store_ready(context)
    assert reason is not None and "127.0.0.1" in reason
    assert readiness_check(context)() == "store"
    with pytest.raises(PinStoreError, match=r"no database connection|refused"):
        open_pin_store(context)
    assert psycopg  # the driver is the real one
