"""The SQLite ledger store: the chain head kept in memory, other writers, the WAL's fsync."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.vocabulary import LedgerState
from mcpward.store.ledger_sqlite import SqliteLedgerStore

from .records import decision


def entries(first: int, count: int) -> list[PendingEntry]:
    return [
        PendingEntry.of_receipt(build_receipt(decision(i)), time.time())
        for i in range(first, first + count)
    ]


def count_head_reads(monkeypatch: pytest.MonkeyPatch) -> dict[int, int]:
    """How often each store reads the head from the database (by id of the store)."""
    reads: dict[int, int] = {}
    real = SqliteLedgerStore._head

    def counted(self: SqliteLedgerStore) -> object:
        reads[id(self)] = reads.get(id(self), 0) + 1
        return real(self)

    monkeypatch.setattr(SqliteLedgerStore, "_head", counted)
    return reads


def test_the_head_is_read_once_then_kept_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_head_reads(monkeypatch)
    ledger = Ledger.open(EvidencePaths.resolve(tmp_path), synchronous="NORMAL")
    for at in range(0, 50, 5):
        ledger.append(entries(at, 5))
    assert reads[id(ledger.store)] == 1  # the first append; none after
    ledger.close()
    assert verify_ledger(EvidencePaths.resolve(tmp_path)).entries == 50


def test_another_writer_moving_the_head_is_noticed_and_the_chain_never_forks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers on one file (as two gateway processes): each append of one after the other's
    finds its remembered head taken (the next seq is the primary key), reads the head again
    inside the write lock and seals anew."""
    paths = EvidencePaths.resolve(tmp_path)
    first = Ledger.open(paths, synchronous="NORMAL")
    second = Ledger.open(paths, synchronous="NORMAL")
    reads = count_head_reads(monkeypatch)
    done = 0
    for turn in range(6):
        writer = first if turn % 2 == 0 else second
        sealed = writer.append(entries(done, 3))
        assert [entry.seq for entry in sealed] == [done, done + 1, done + 2]
        done += 3
    # Three appends each; all but the very first of each read the head again after the other's
    # append (the very first, with nothing remembered, reads it too).
    assert reads[id(first.store)] == 3 and reads[id(second.store)] == 3
    first.append(entries(done, 2))  # the other wrote last: read again
    first.append(entries(done + 2, 2))  # nobody else wrote: from memory
    assert reads[id(first.store)] == 4
    first.checkpoint()
    first.close()
    second.close()
    report = verify_ledger(paths)
    assert (report.state, report.entries) == (LedgerState.OK, done + 4), report.to_dict()


def test_a_key_rotation_by_another_process_is_picked_up(tmp_path: Path) -> None:
    """`mcpward ledger rotate-key` appends from its own connection: the gateway's next batch is
    sealed with the new key, not the one its remembered head names."""
    paths = EvidencePaths.resolve(tmp_path)
    gateway = Ledger.open(paths, synchronous="NORMAL")
    gateway.append(entries(0, 3))
    cli = Ledger.open(paths)
    rotation = cli.rotate_key()
    cli.close()
    sealed = gateway.append(entries(3, 2))
    assert sealed[0].seq == rotation.seq + 1
    assert sealed[-1].next_key_id == rotation.new_key_id
    gateway.checkpoint()
    gateway.close()
    assert verify_ledger(paths).state is LedgerState.OK


def test_large_batches_commit_as_one_transaction(tmp_path: Path) -> None:
    paths = EvidencePaths.resolve(tmp_path)
    ledger = Ledger.open(paths, synchronous="NORMAL")
    ledger.append(entries(0, 1))
    ledger.append(entries(1, 400))  # several INSERT statements, one transaction
    ledger.checkpoint()
    ledger.close()
    report = verify_ledger(paths)
    assert (report.state, report.entries) == (LedgerState.OK, 401)


def test_sync_wal_fsyncs_the_write_ahead_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fdatasync

    def counted(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    paths = EvidencePaths.resolve(tmp_path)
    ledger = Ledger.open(paths, synchronous="NORMAL")
    ledger.append(entries(0, 2))
    assert ledger.store.sync_wal() is True
    wal = paths.ledger.with_name(paths.ledger.name + "-wal")
    assert synced == [wal.stat().st_ino]
    assert ledger.store.wal_syncs == 1
    ledger.close()


def test_a_checkpoint_is_published_only_after_its_entries_are_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A published checkpoint that outlived the entries it covers (a power cut) would make the
    ledger look truncated: the WAL is fsynced before checkpoint.latest is written."""
    paths = EvidencePaths.resolve(tmp_path)
    ledger = Ledger.open(paths, synchronous="NORMAL")
    ledger.append(entries(0, 3))
    order: list[str] = []
    real_sync = ledger.store.sync_wal

    def sync() -> bool:
        order.append("fsync")
        return real_sync()

    def publish(path: Path, text: str) -> None:
        order.append("publish")

    monkeypatch.setattr(ledger.store, "sync_wal", sync)
    monkeypatch.setattr("mcpward.evidence.ledger.write_public_file", publish)
    ledger.checkpoint()
    assert order == ["fsync", "publish"]
    ledger.close()
