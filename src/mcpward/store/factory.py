"""The one place that opens the configured store: SQLite files in the state dir, or PostgreSQL.

Callers (gateway, CLI, console) build a `StoreContext` from their config and never name a
backend themselves; the commands a hold prints come from here too, so they name the same store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mcpward.contracts.store import PinStore, PinStoreError
from mcpward.identity.revocations import RevocationSet, RevocationUnavailable
from mcpward.secret_refs import SecretRef
from mcpward.store.keys import KeyFileError, key_from_ref, load_or_create_secret, read_secret
from mcpward.store.paths import resolve_state_dir, state_dir_path
from mcpward.store.settings import KeysSettings, StoreSettings

if TYPE_CHECKING:  # identity imports the pipeline, which imports this module
    from mcpward.store.clients import ClientRecords
    from mcpward.store.postgres.pool import PgPool

PINS_KEY_NAME = "pins.key"
log = logging.getLogger("mcpward.store")


class ConfigWithStore(Protocol):
    """What the factory reads from a `GatewayConfig` (kept structural: the store layer sits
    below the config layer)."""

    @property
    def store(self) -> StoreSettings: ...

    @property
    def keys(self) -> KeysSettings: ...

    @property
    def state_dir(self) -> Path | None: ...


@dataclass(frozen=True, slots=True)
class StoreContext:
    """Which store a process uses and how a person reaches the same one from the CLI."""

    settings: StoreSettings
    state_dir: Path
    keys_dir: Path
    config_path: Path | None = None  # the config file naming this store, if any
    pins_ref: SecretRef | None = None  # `keys.pins`: the pins key from a SecretRef, not the dir
    hmac_refs: tuple[SecretRef, ...] = ()  # `keys.ledger_hmac`: the ledger's HMAC keys
    signing_ref: SecretRef | None = None  # `keys.signing`: the checkpoint signing key

    @property
    def postgres(self) -> bool:
        return self.settings.kind == "postgres"

    def cli_args(self) -> tuple[str, ...]:
        """The arguments that point a CLI command at this store (`--config F` for PostgreSQL:
        the database is only reachable through the config)."""
        separate_keys = self.keys_dir != self.state_dir or self.keys_by_ref
        if self.config_path is not None and (self.postgres or separate_keys):
            return ("--config", str(self.config_path))
        return ("--state-dir", str(self.state_dir))

    @property
    def keys_by_ref(self) -> bool:
        """Some key comes from a SecretRef (only the config file names it)."""
        return self.pins_ref is not None or bool(self.hmac_refs) or self.signing_ref is not None

    def pins_key(self, *, create: bool = True) -> bytes:
        """The key that MACs pins, holds, revocations and client records: `keys.pins` when
        given (read, never created), else `pins.key` in the keys directory (created once unless
        `create` is False)."""
        if self.pins_ref is not None:
            try:
                return key_from_ref(self.pins_ref, "keys.pins")
            except KeyFileError as exc:
                raise PinStoreError(f"pin store key {exc}") from None
        path = self.keys_dir / PINS_KEY_NAME
        try:
            if not create:
                return read_secret(path)
            self.keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            return load_or_create_secret(path)
        except (KeyFileError, OSError) as exc:
            raise PinStoreError(f"pin store key {path}: {exc}") from None


def sqlite_context(state_dir: Path) -> StoreContext:
    """The embedded store of one state directory (no config file)."""
    return StoreContext(StoreSettings(), state_dir, state_dir)


def context_from_config(
    config: ConfigWithStore, config_path: Path | str | None, *, create: bool = True
) -> StoreContext:
    """The config's store; `create`: make the state directory if missing (doctor only looks)."""
    state_dir = (resolve_state_dir if create else state_dir_path)(config.state_dir)
    keys_dir = config.keys.dir.expanduser() if config.keys.dir is not None else state_dir
    path = Path(config_path).expanduser().resolve() if config_path is not None else None
    keys = config.keys
    return StoreContext(
        config.store,
        state_dir,
        keys_dir,
        path,
        keys.pins,
        tuple(keys.ledger_hmac or ()),
        keys.signing,
    )


def migrate_hint(context: StoreContext) -> str:
    return " ".join(context.cli_args())


def open_pin_store(context: StoreContext, *, listen: bool = True) -> PinStore:
    """The configured pin store, checked: a PostgreSQL schema behind or ahead is refused.
    `listen` (PostgreSQL): follow other replicas' changes; one-shot CLI commands pass False."""
    if not context.postgres:
        from mcpward.store.pins_sqlite import SqlitePinStore

        return SqlitePinStore(context.state_dir, key=context.pins_key())
    from mcpward.store.postgres.migrations import SchemaMismatch, check_schema
    from mcpward.store.postgres.pins import PostgresPinStore
    from mcpward.store.postgres.pool import PostgresUnavailable, acquire_pool, release_pool

    key = context.pins_key()
    try:
        pool = acquire_pool(context.settings)
    except PostgresUnavailable as exc:
        raise PinStoreError(f"pin store: {exc}") from None
    try:
        check_schema(pool, migrate_hint(context))
        return PostgresPinStore(pool, key, listen=listen)
    except (PostgresUnavailable, SchemaMismatch) as exc:
        release_pool(pool)
        raise PinStoreError(f"pin store: {exc}") from None


def store_problem(context: StoreContext) -> tuple[str, str] | None:
    """None when the store answers and its schema is current; else (word, reason): the word is
    `store` or `migrations` (all /readyz reveals), the reason is for logs and the CLI."""
    if not context.postgres:
        if os.access(context.state_dir, os.W_OK | os.X_OK):
            return None
        return "store", f"{context.state_dir} is missing or not writable"
    from mcpward.store.postgres.migrations import SchemaMismatch, check_schema
    from mcpward.store.postgres.pool import PostgresUnavailable, acquire_pool, release_pool

    try:
        pool = acquire_pool(context.settings)
    except PostgresUnavailable as exc:
        return "store", str(exc)
    try:
        check_schema(pool, migrate_hint(context))
    except PostgresUnavailable as exc:
        return "store", str(exc)
    except SchemaMismatch as exc:
        return "migrations", str(exc)
    finally:
        release_pool(pool)
    return None


def store_ready(context: StoreContext) -> str | None:
    """None when ready, else why not (names no secret)."""
    problem = store_problem(context)
    return problem[1] if problem is not None else None


def readiness_check(context: StoreContext) -> Callable[[], str | None]:
    """For the HTTP front's /readyz: None, `store` or `migrations` (the reason goes to the log)."""

    def check() -> str | None:
        problem = store_problem(context)
        if problem is None:
            return None
        log.debug("not ready: %s", problem[1])
        return problem[0]

    return check


class Revocations(RevocationSet, Protocol):
    """A revocation set that the CLI can also write and list."""

    def revoke(self, subject: str) -> bool: ...

    def subjects(self) -> list[tuple[str, float]]: ...

    def close(self) -> None: ...


def open_revocations(context: StoreContext, *, listen: bool = True) -> Revocations:
    """The token revocations of the configured store (`listen`: follow other replicas' changes;
    one-shot CLI commands pass False). Raises RevocationUnavailable."""
    if not context.postgres:
        from mcpward.store.revocations import SqliteRevocations

        return SqliteRevocations(context.state_dir)
    from mcpward.store.postgres.revocations import PostgresRevocations

    key, pool = _shared_store(context, "token revocations", RevocationUnavailable)
    return PostgresRevocations(pool, key, listen=listen)


def open_client_records(context: StoreContext, *, listen: bool = True) -> ClientRecords:
    """The client records of the configured store (roles and ceilings that replace the config's;
    `listen` as for revocations). Raises ClientRecordsUnavailable."""
    from mcpward.identity.client_records import ClientRecordsUnavailable

    if not context.postgres:
        from mcpward.store.clients import SqliteClientRecords

        return SqliteClientRecords(context.state_dir)
    from mcpward.store.postgres.clients import PostgresClientRecords

    key, pool = _shared_store(context, "client records", ClientRecordsUnavailable)
    return PostgresClientRecords(pool, key, listen=listen)


def _shared_store(context: StoreContext, what: str, error: type[Exception]) -> tuple[bytes, PgPool]:
    """The pins key and a pool on a database whose schema is current; `error(message)` else.
    The caller owns one reference to the pool."""
    from mcpward.store.postgres.migrations import SchemaMismatch, check_schema
    from mcpward.store.postgres.pool import PostgresUnavailable, acquire_pool, release_pool

    try:
        key = context.pins_key()
    except PinStoreError as exc:
        raise error(str(exc)) from None
    try:
        pool = acquire_pool(context.settings)
    except PostgresUnavailable as exc:
        raise error(f"{what}: {exc}") from None
    try:
        check_schema(pool, migrate_hint(context))
    except (PostgresUnavailable, SchemaMismatch) as exc:
        release_pool(pool)
        raise error(f"{what}: {exc}") from None
    return key, pool
