"""How a gateway replica on PostgreSQL starts: whether or not the database answers.

The pool is held for the gateway's life (`store.replica`); a ledger that cannot be opened because
the server is away becomes a `DeferredRecorder` (every call fails closed until it opens). A schema
behind or ahead, or an unreadable DSN, still refuses the start.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcpward.evidence.deferred import DeferredRecorder
from mcpward.evidence.record import Recorder
from mcpward.evidence.recorder import build_recorder
from mcpward.evidence.settings import EvidenceSettings
from mcpward.store.factory import StoreContext
from mcpward.store.ledger_sqlite import LedgerStoreError
from mcpward.store.replica import ReplicaStore


def open_replica(store: StoreContext) -> ReplicaStore | None:
    """The replica's hold on its database (None for SQLite). Raises PostgresUnavailable when
    the DSN cannot be read."""
    return ReplicaStore(store) if store.postgres else None


def replica_recorder(
    settings: EvidenceSettings, state_dir: Path, store: StoreContext, replica: ReplicaStore | None
) -> Recorder:
    """The evidence recorder; deferred while the replica's database is away."""
    try:
        return build_recorder(settings, state_dir, store)
    except LedgerStoreError:
        if replica is None or not replica.away:
            raise  # a schema behind or ahead, not a ledger: a configuration error
    return DeferredRecorder(lambda: build_recorder(settings, state_dir, store))


def replica_readiness(replica: ReplicaStore, recorder: Recorder) -> Callable[[], str | None]:
    """For /readyz: `store` until the database answers and the ledger is open, `migrations`
    for a schema behind or ahead, else None."""

    def check() -> str | None:
        word = replica.not_ready()
        if word is None and isinstance(recorder, DeferredRecorder) and not recorder.open:
            return "store"
        return word

    return check
