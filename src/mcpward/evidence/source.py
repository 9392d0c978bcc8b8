"""Where a reader finds the ledger and its keys: the state dir's SQLite file, or the fleet's
PostgreSQL ledger when the store is `postgres`. The CLI and the console both read through it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass

from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.ledger_keys import load_ledger_keys
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.store import LedgerView
from mcpward.evidence.verify import VerifyReport
from mcpward.store.factory import StoreContext, migrate_hint
from mcpward.store.ledger_sqlite import read_snapshot
from mcpward.store.postgres.ledger import open_postgres_ledger, open_postgres_snapshot
from mcpward.store.postgres.pool import describe_dsn, resolve_dsn


@dataclass(frozen=True, slots=True)
class LedgerSource:
    paths: EvidencePaths
    store: StoreContext | None = None

    @property
    def postgres(self) -> bool:
        return self.store is not None and self.store.postgres

    def exists(self) -> bool:
        """A PostgreSQL ledger always exists once migrated; a SQLite one once written."""
        return self.postgres or self.paths.ledger.exists()

    @property
    def where(self) -> str:
        """For pages and messages: the file, or postgres://host:port/db (never credentials)."""
        if self.store is not None and self.store.postgres:
            try:
                return describe_dsn(resolve_dsn(self.store.settings))
            except Exception:  # an unreadable DSN secret: say so, not which
                return "postgres"
        return str(self.paths.ledger)

    def snapshot(self) -> AbstractContextManager[LedgerView]:
        """A read-only snapshot (raises LedgerStoreError when it cannot be read)."""
        if self.store is not None and self.store.postgres:
            return open_postgres_snapshot(self.store.settings)
        return read_snapshot(self.paths.ledger)

    def verify(self) -> VerifyReport:
        return verify_ledger(self.paths, view_of=self.snapshot() if self.postgres else None)

    def open_ledger(self) -> Ledger:
        """The writable ledger (SQLite: created if missing)."""
        if self.store is None or not self.store.postgres:
            return Ledger.open(self.paths)
        keys = load_ledger_keys(self.paths)
        backend = open_postgres_ledger(
            self.store.settings, synchronous_commit=True, migrate_hint=migrate_hint(self.store)
        )
        try:
            return Ledger.open(self.paths, store=backend, keys=keys)
        except BaseException:
            backend.close()
            raise
