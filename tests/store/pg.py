"""Helpers for the store tests: a StoreContext on a real PostgreSQL database, and its config."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from mcpward.store.factory import StoreContext
from mcpward.store.postgres.migrations import migrate
from mcpward.store.postgres.pool import acquire_pool, release_pool
from mcpward.store.settings import KeysSettings, PoolSettings, StoreSettings

DSN_ENV = "MCPWARD_TEST_PG_DSN"


def pg_context(dsn: str, tmp_path: Path, *, migrated: bool = True) -> StoreContext:
    """A PostgreSQL store context whose DSN is a literal (tests only; it carries a password, so
    it is built directly rather than through config validation)."""
    settings = StoreSettings.model_construct(
        kind="postgres",
        dsn=dsn,
        pool=StoreSettings().pool,
        timeout_s=3.0,
    )
    keys = tmp_path / "keys"
    context = StoreContext(settings, tmp_path / "state", keys, tmp_path / "mcpward.yaml")
    (tmp_path / "state").mkdir(parents=True, exist_ok=True)
    if migrated:
        pool = acquire_pool(settings)
        try:
            migrate(pool)
        finally:
            release_pool(pool)
    return context


def replica_context(base: StoreContext, pool_max: int) -> StoreContext:
    """Another replica: a pool of its own (pools are shared per settings within a process)."""
    settings = base.settings.model_copy(update={"pool": PoolSettings(min=1, max=pool_max)})
    return dataclasses.replace(base, settings=settings)


class Closable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=Closable)


@contextlib.contextmanager
def two_replicas(base: StoreContext, open_store: Callable[[StoreContext], T]) -> Iterator[list[T]]:
    """The same store opened as two replicas, each with a pool of its own; closed afterwards."""
    replicas = [open_store(replica_context(base, n)) for n in (3, 5)]
    try:
        yield replicas
    finally:
        for replica in replicas:
            replica.close()


def store_yaml(keys_dir: Path, state_dir: Path, env: str = DSN_ENV) -> str:
    """The `store:`/`keys:`/`state_dir` part of a config file that reads the DSN from `env`."""
    return (
        f"state_dir: {state_dir}\n"
        f"store:\n  kind: postgres\n  dsn: {{env: {env}}}\n  pool: {{min: 1, max: 4}}\n"
        f"keys:\n  dir: {keys_dir}\n"
    )


__all__ = ["DSN_ENV", "KeysSettings", "pg_context", "replica_context", "store_yaml", "two_replicas"]
