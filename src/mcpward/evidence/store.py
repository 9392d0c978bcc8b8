"""The ledger storage interface: append-only entries plus signed checkpoints, one backend per store.

The embedded SQLite backend is `mcpward.store.ledger_sqlite`; the fleet's shared one is
`mcpward.store.postgres.ledger` (one chain for every replica).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from mcpward.evidence.chain import ChainHead, SealedEntry


class LedgerUnavailable(RuntimeError):
    """The ledger's database cannot be reached right now (down, restarting, unreachable).

    Nothing of the failed call was acknowledged; the store reconnects by itself on a later call,
    so the writer fails the batch in hand (closed) and keeps going."""


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """An entry as stored: what verification recomputes and compares."""

    seq: int
    body: bytes
    entry_hash: bytes
    hmac: bytes
    recorded_at: float


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    size: int
    created_at: float
    note: str


@dataclass(frozen=True, slots=True)
class DurabilitySpan:
    """Entries from `since_seq` on were written at this durability level."""

    since_seq: int
    level: str
    noted_at: float


class LedgerView(Protocol):
    """A consistent read snapshot: entries and checkpoints as of one moment."""

    def ledger_id(self) -> str | None: ...

    def size(self) -> int: ...

    def entries(
        self, start_seq: int = 0, since: float | None = None, limit: int | None = None
    ) -> Iterator[StoredEntry]: ...

    def last_entries(self, count: int) -> list[StoredEntry]: ...

    def checkpoints(self) -> list[StoredCheckpoint]: ...

    def durability(self) -> list[DurabilitySpan]: ...


class LedgerStore(Protocol):
    """Append-only storage. `append` and `add_checkpoint` are atomic against concurrent writers
    (several gateway processes may share one ledger): the head is read inside the write lock."""

    wal_syncs: int  # fsyncs `sync_wal` has made (the writer reports it; tests count it)

    @property
    def ledger_id(self) -> str: ...

    def append(self, build: Callable[[ChainHead], Sequence[SealedEntry]]) -> list[SealedEntry]: ...

    def head(self) -> ChainHead: ...

    def add_checkpoint(
        self, sign: Callable[[int, bytes], str], created_at: float
    ) -> StoredCheckpoint | None:
        """Sign the current (size, head hash) with `sign` and store the note; None if empty."""
        ...

    def reading(self) -> AbstractContextManager[LedgerView]: ...

    def sync_wal(self) -> bool:
        """Make every entry committed before the call durable against a power cut (fsync).
        Callable from another thread while appends go on; False if nothing was ever written."""
        ...

    def note_durability(self, level: str, noted_at: float) -> None:
        """Record the level the entries from the current head on are written at."""
        ...

    def close(self) -> None: ...
