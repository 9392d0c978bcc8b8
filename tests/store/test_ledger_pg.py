"""The fleet's ledger on a real PostgreSQL server: replicas appending to one chain, the fleet-only
tamper cases, an export verified with only the public key, and an outage the writer survives."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
from pathlib import Path

import orjson
import psycopg
import pytest

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.export import export_jsonl, read_jsonl
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.receipt import build_receipt, payload_hashes
from mcpward.evidence.recorder import LedgerRecorder, open_ledger
from mcpward.evidence.settings import EvidencePaths, EvidenceSettings
from mcpward.evidence.store import LedgerUnavailable
from mcpward.evidence.verify import LedgerVerifier
from mcpward.evidence.vocabulary import LedgerState, VerifyReason
from mcpward.evidence.writer import EvidenceUnavailable
from mcpward.store.factory import StoreContext
from mcpward.store.postgres.append_statement import PREPARED_MAX_ROWS
from mcpward.store.postgres.ledger import PostgresLedgerStore, open_postgres_snapshot
from mcpward.store.postgres.pool import PgPool
from mcpward.store.settings import StoreSettings
from tests.evidence.records import decision
from tests.evidence.tamper import attacker, pg_evidence, verify
from tests.evidence.tamper import open_ledger as open_test_ledger
from tests.store.fleet_replicas import own_cluster_dir
from tests.store.pg import pg_context
from tests.support.postgres import running_cluster


def replica(context: StoreContext, tmp_path: Path, name: str) -> tuple[Ledger, EvidencePaths]:
    """One replica's view of the fleet ledger: its own state dir, the shared keys and database."""
    state = tmp_path / name
    state.mkdir(exist_ok=True)
    paths = pg_evidence(StoreContext(context.settings, state, context.keys_dir), tmp_path / name)
    return open_test_ledger(paths), paths


def receipts(first: int, count: int) -> list[PendingEntry]:
    return [
        PendingEntry.of_receipt(build_receipt(decision(i)), time.time())
        for i in range(first, first + count)
    ]


def two_replicas_interleaved(
    context: StoreContext, tmp_path: Path, rounds: int = 30
) -> tuple[list[int], list[int], EvidencePaths]:
    """Replicas a and b append batches from two threads at once; the seqs each one wrote."""
    (ledger_a, paths_a), (ledger_b, _) = (
        replica(context, tmp_path, "a"),
        replica(context, tmp_path, "b"),
    )
    written: dict[str, list[int]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def run(name: str, ledger: Ledger) -> None:
        start.wait()
        for n in range(rounds):
            sealed = ledger.append(receipts(n * 3, 3))
            written[name] += [entry.seq for entry in sealed]

    threads = [
        threading.Thread(target=run, args=(name, ledger))
        for name, ledger in (("a", ledger_a), ("b", ledger_b))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written["a"] += [entry.seq for entry in ledger_a.append(receipts(500, 3))]  # a writes last
    ledger_a.checkpoint()
    ledger_a.close()
    ledger_b.close()
    return written["a"], written["b"], paths_a


def test_two_replicas_append_to_one_chain_and_it_verifies(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    a, b, paths = two_replicas_interleaved(context, tmp_path)
    assert (len(a), len(b)) == (93, 90) and not set(a) & set(b)
    assert sorted(a + b) == list(range(183))  # one sequence, no gap, no fork
    report = verify(paths)
    assert (report.state, report.entries, report.verified_through) == (LedgerState.OK, 183, 183)


def test_a_whole_replicas_records_dropped(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    _a, b, paths = two_replicas_interleaved(context, tmp_path)
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq = ANY(?)", (b,))
    report = verify(paths)
    assert (report.state, report.reason, report.first_bad_seq) == (
        LedgerState.TAMPERED,
        VerifyReason.SEQUENCE_GAP,
        min(b),
    ), report.to_dict()


def test_one_replicas_tail_deleted(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    a, b, paths = two_replicas_interleaved(context, tmp_path)
    # b's last records lie in the middle of the chain (a wrote after them): a gap
    cut = b[-6:]
    assert max(cut) < max(a)
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq = ANY(?)", (cut,))
    report = verify(paths)
    assert (report.state, report.reason, report.first_bad_seq) == (
        LedgerState.TAMPERED,
        VerifyReason.SEQUENCE_GAP,
        min(cut),
    ), report.to_dict()


def test_the_last_replicas_tail_deleted_is_truncated(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    a, _b, paths = two_replicas_interleaved(context, tmp_path)
    cut = a[-3:]  # a wrote last
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq >= ?", (min(cut),))
    report = verify(paths)
    assert (report.state, report.reason, report.first_bad_seq) == (
        LedgerState.TRUNCATED,
        VerifyReason.FEWER_ENTRIES_THAN_CHECKPOINT,
        min(cut),
    ), report.to_dict()


def test_an_export_verifies_with_only_the_public_key(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    _, b, paths = two_replicas_interleaved(context, tmp_path)
    published = tmp_path / "published.pub"
    shutil.copy(paths.public_key, published)
    export = tmp_path / "fleet.jsonl"
    with open_postgres_snapshot(context.settings) as view, export.open("wb") as out:
        assert export_jsonl(view, out) == 183
        notes = [cp.note for cp in view.checkpoints()]
    outsider = LedgerVerifier(verifiers=[*_keys(published)])
    exported = read_jsonl(export)
    report = outsider.verify(
        exported.entries, notes, start_seq=None, start_prev=exported.start_prev
    )
    assert (report.state, report.verified_through) == (LedgerState.OK, 183), report.to_dict()
    # the same export without replica b's lines: the chain breaks where b's first line was
    kept = [e for e in exported.entries if e.seq not in set(b)]
    report = outsider.verify(kept, notes, start_seq=None, start_prev=exported.start_prev)
    if min(b) == 0:  # the export now starts at a's first line, which does not follow seq -1
        expected = (VerifyReason.ENTRY_HASH_MISMATCH, kept[0].seq)
    else:
        expected = (VerifyReason.SEQUENCE_GAP, min(b))
    assert (report.state, report.reason, report.first_bad_seq) == (LedgerState.TAMPERED, *expected)


def _keys(path: Path) -> list:  # type: ignore[type-arg]
    from mcpward.evidence.keyring import read_verifier_keys

    return list(read_verifier_keys(path))


def test_the_store_refuses_a_database_without_the_ledger_schema(
    pg_dsn: str, tmp_path: Path
) -> None:
    context = pg_context(pg_dsn, tmp_path, migrated=False)
    with pytest.raises(Exception, match="mcpward store migrate"):
        open_ledger(EvidenceSettings(), context.state_dir, context)


async def test_database_down_fails_closed_and_the_writer_recovers(tmp_path: Path) -> None:
    """A cluster of its own, stopped and started again: receipts are refused while it is down
    (no answer may go out), the writer keeps running, and commits resume when it is back."""
    with running_cluster(own_cluster_dir()) as cluster:
        context = pg_context(cluster.create_database("fleet"), tmp_path)
        settings = EvidenceSettings(durability="crash_safe")
        recorder = LedgerRecorder(open_ledger(settings, context.state_dir, context), settings)
        for i in range(5):
            await recorder.record(decision(i))
        cluster.stop("fast")  # a clean stop: every commit made before it is kept
        with pytest.raises(EvidenceUnavailable, match="receipt not committed"):
            await recorder.record(decision(5))
        with pytest.raises(EvidenceUnavailable):
            await recorder.record(decision(6))
        cluster.start()
        deadline = time.monotonic() + 20
        while True:  # the first calls after the restart may still see the back-off
            try:
                await recorder.record(decision(7))
                break
            except EvidenceUnavailable:
                assert time.monotonic() < deadline, "the writer never recovered"
                await asyncio.sleep(0.1)
        for i in range(8, 12):
            await recorder.record(decision(i))
        committed = recorder.committed
        await recorder.close()
        paths = EvidencePaths.resolve(context.state_dir, None, context.keys_dir)
        with open_postgres_snapshot(context.settings) as view:
            entries = list(view.entries())
        # every acknowledged receipt is there, and nothing else (the refused ones never reached
        # a live server); the chain is whole and signed at close
        assert committed == len(entries) == 10
        served = [orjson.loads(e.body)["receipt"]["input_hash"] for e in entries]
        assert served == [
            payload_hashes(decision(i)).input_hash for i in [*range(5), *range(7, 12)]
        ]
        report = verify_on(paths, context)
        assert report.state is LedgerState.OK, report.to_dict()


def verify_on(paths: EvidencePaths, context: StoreContext):  # type: ignore[no-untyped-def]
    from mcpward.evidence.ledger import verify_ledger

    return verify_ledger(paths, view_of=open_postgres_snapshot(context.settings))


def test_a_store_error_is_unavailable_not_fatal(tmp_path: Path) -> None:
    """The mapping the writer relies on: a lost server is LedgerUnavailable, raised fast."""
    with running_cluster(own_cluster_dir()) as cluster:
        context = pg_context(cluster.create_database("fleet"), tmp_path)
        dsn = context.settings.dsn
        assert isinstance(dsn, str)
        pool = PgPool(dsn, StoreSettings(timeout_s=2.0))
        store = PostgresLedgerStore(pool, synchronous_commit=False)
        assert store.head().size == 0
        cluster.stop("immediate")
        with pytest.raises(LedgerUnavailable):
            store.head()
        with pytest.raises(LedgerUnavailable):
            store.sync_wal()
        cluster.start()
        time.sleep(0.3)  # past the back-off
        assert store.head().size == 0 and store.sync_wal()
        store.close()
        pool.pool.close()
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM ledger_entries").fetchone() == (0,)


def test_a_batch_past_the_values_limit_goes_in_as_arrays(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    ledger, paths = replica(context, tmp_path, "a")
    ledger.append(receipts(0, 3))  # VALUES, head cached
    big = ledger.append(receipts(3, 2100))  # arrays, in one statement
    ledger.checkpoint()
    ledger.close()
    assert [big[0].seq, big[-1].seq] == [3, 2102]
    report = verify(paths)
    assert (report.state, report.entries, report.verified_through) == (LedgerState.OK, 2103, 2103)


def test_batches_on_both_sides_of_the_prepared_limit_verify(pg_dsn: str, tmp_path: Path) -> None:
    """Up to PREPARED_MAX_ROWS rows go as a prepared statement through libpq, more through
    psycopg: the chain is one and verifies either way."""
    context = pg_context(pg_dsn, tmp_path)
    ledger, paths = replica(context, tmp_path, "a")
    sizes = [1, 1, PREPARED_MAX_ROWS, PREPARED_MAX_ROWS + 1, 2, 1]
    first = 0
    for size in sizes:
        sealed = ledger.append(receipts(first, size))
        assert [e.seq for e in sealed] == list(range(first, first + size))
        first += size
    ledger.checkpoint()
    ledger.close()
    report = verify(paths)
    assert (report.state, report.entries) == (LedgerState.OK, first)


def test_a_lost_server_fails_the_prepared_append_as_unavailable(tmp_path: Path) -> None:
    """The prepared append maps a vanished server (no SQLSTATE) and a shutting-down one (57P01)
    to LedgerUnavailable like psycopg's path, and works again on a new connection."""
    with running_cluster(own_cluster_dir()) as cluster:
        context = pg_context(cluster.create_database("fleet"), tmp_path)
        ledger, paths = replica(context, tmp_path, "a")
        assert [e.seq for e in ledger.append(receipts(0, 2))] == [0, 1]  # head cached
        ledger.checkpoint()  # committed with synchronous_commit on: survives the crash below
        for mode, seq in (("immediate", 2), ("fast", 3)):
            cluster.stop(mode)
            with pytest.raises(LedgerUnavailable):
                ledger.append(receipts(seq, 1))
            cluster.start()
            time.sleep(0.3)  # past the back-off
            assert [e.seq for e in ledger.append(receipts(seq, 1))] == [seq]
        ledger.checkpoint()
        ledger.close()
        report = verify(paths)
        assert (report.state, report.entries) == (LedgerState.OK, 4)


def test_a_head_moved_by_another_replica_is_read_again_under_the_lock(
    pg_dsn: str, tmp_path: Path
) -> None:
    context = pg_context(pg_dsn, tmp_path)
    (a, paths), (b, _) = replica(context, tmp_path, "a"), replica(context, tmp_path, "b")
    assert [e.seq for e in a.append(receipts(0, 2))] == [0, 1]  # a caches head 2
    assert [e.seq for e in b.append(receipts(2, 2))] == [2, 3]  # b reads it: 4
    store = a.store
    assert isinstance(store, PostgresLedgerStore) and store.contended == 0
    # a's cached head (2) is stale: its INSERT collides, rolls back whole, and is sealed anew
    assert [e.seq for e in a.append(receipts(4, 2))] == [4, 5]
    assert store.contended == 1
    a.checkpoint()
    a.close()
    b.close()
    report = verify(paths)
    assert (report.state, report.entries, report.verified_through) == (LedgerState.OK, 6, 6)


async def test_the_cli_exports_and_an_outsider_verifies_with_the_public_key_only(
    pg_dsn: str, tmp_path: Path
) -> None:
    from tests.store.fleet_replicas import mcpward
    from tests.store.pg import DSN_ENV, store_yaml

    context = pg_context(pg_dsn, tmp_path)
    two_replicas_interleaved(context, tmp_path, rounds=5)
    config = tmp_path / "mcpward.yaml"
    config.write_text(
        "version: 1\nupstreams: [{id: none, kind: stdio, command: /bin/true}]\n"
        + store_yaml(context.keys_dir, context.state_dir)
    )
    env = {DSN_ENV: pg_dsn}
    export, note, key = tmp_path / "fleet.jsonl", tmp_path / "cp.note", tmp_path / "fleet.pub"
    for args in (
        ("ledger", "export", "--config", str(config), "-o", str(export)),
        ("ledger", "checkpoint", "--config", str(config), "-o", str(note)),
    ):
        code, out = await mcpward(*args, env=env)
        assert code == 0, out
    code, out = await mcpward("ledger", "public-key", "--config", str(config), env=env)
    assert code == 0, out
    key.write_text(out)
    outsider = tmp_path / "outsider"  # no keys, no database, no config
    outsider.mkdir()
    verify_args = ["ledger", "verify", "--json", "--state-dir", str(outsider)]
    verify_args += ["--ledger", str(export), "--public-key", str(key), "--checkpoint", str(note)]
    code, out = await mcpward(*verify_args)
    assert code == 0, out
    report = json.loads(out)
    assert (report["state"], report["verified_through"], report["hmac_checked"]) == (
        "ok",
        33,
        False,
    )
    lines = export.read_bytes().splitlines()
    export.write_bytes(b"\n".join(lines[:10] + lines[11:]) + b"\n")  # one line dropped
    code, out = await mcpward(*verify_args)
    assert code == 1 and json.loads(out)["reason"] == "sequence_gap", out
