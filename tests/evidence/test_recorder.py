"""The Recorder: durability modes, scheduled checkpoints, recovery, concurrency, failing closed."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import orjson
import pytest

from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.receipt import ReceiptError
from mcpward.evidence.record import NullRecorder
from mcpward.evidence.recorder import EvidenceUnavailable, LedgerRecorder, build_recorder
from mcpward.evidence.schemas import receipt_schema
from mcpward.evidence.settings import EvidencePaths, EvidenceSettings
from mcpward.evidence.vocabulary import LedgerState
from mcpward.store.ledger_sqlite import read_snapshot

from .records import decision
from .tamper import attacker, edit_body, rows


def recorder(state: Path, **settings: object) -> LedgerRecorder:
    built = build_recorder(EvidenceSettings.model_validate(settings), state)
    assert isinstance(built, LedgerRecorder)
    return built


def stored_receipts(paths: EvidencePaths) -> list[dict[str, object]]:
    with read_snapshot(paths.ledger) as view:
        entries = [orjson.loads(e.body) for e in view.entries()]
    return [e["receipt"] for e in entries if e["kind"] == "receipt"]


def checkpoint_sizes(paths: EvidencePaths) -> list[int]:
    with read_snapshot(paths.ledger) as view:
        return [cp.size for cp in view.checkpoints()]


async def test_sync_receipt_is_committed_before_record_returns(tmp_path: Path) -> None:
    rec = recorder(tmp_path)
    paths = EvidencePaths.resolve(tmp_path)
    for i in range(5):
        await rec.record(decision(i))
        # Another connection (as after a crash) already sees it.
        assert len(stored_receipts(paths)) == i + 1
    await rec.close()
    report = verify_ledger(paths)
    assert report.state is LedgerState.OK and report.entries == 5
    validator = jsonschema.Draft202012Validator(receipt_schema())
    for receipt in stored_receipts(paths):
        validator.validate(receipt)


async def test_batched_commits_everything_by_close_and_signs_the_end(tmp_path: Path) -> None:
    rec = recorder(tmp_path, durability="batched", batch_max_entries=16, batch_interval_ms=5)
    paths = EvidencePaths.resolve(tmp_path)
    for i in range(500):
        await rec.record(decision(i))
    await rec.close()
    assert len(stored_receipts(paths)) == 500
    assert checkpoint_sizes(paths)[-1] == 500
    assert verify_ledger(paths).state is LedgerState.OK


async def test_batched_commits_without_close_after_the_interval(tmp_path: Path) -> None:
    rec = recorder(tmp_path, durability="batched", batch_interval_ms=10)
    paths = EvidencePaths.resolve(tmp_path)
    await rec.record(decision(0))
    for _ in range(500):  # poll; no timing assertion
        if stored_receipts(paths):
            break
        await asyncio.sleep(0.02)
    assert len(stored_receipts(paths)) == 1
    await rec.close()


async def test_checkpoint_every_n_entries_and_at_clean_shutdown(tmp_path: Path) -> None:
    rec = recorder(tmp_path, checkpoint_every_entries=10)
    paths = EvidencePaths.resolve(tmp_path)
    for i in range(25):
        await rec.record(decision(i))
    assert checkpoint_sizes(paths) == [10, 20]
    await rec.close()
    assert checkpoint_sizes(paths) == [10, 20, 25]
    assert paths.latest_checkpoint.read_text(encoding="utf-8").splitlines()[1] == "25"


async def test_checkpoint_every_t_seconds_while_idle(tmp_path: Path) -> None:
    rec = recorder(tmp_path, checkpoint_every_seconds=0.2)
    paths = EvidencePaths.resolve(tmp_path)
    await rec.record(decision(0))
    for _ in range(500):
        if checkpoint_sizes(paths):
            break
        await asyncio.sleep(0.02)
    assert checkpoint_sizes(paths) == [1]
    await rec.close()


async def test_concurrent_sync_records_are_group_committed(tmp_path: Path) -> None:
    rec = recorder(tmp_path)
    await asyncio.gather(*(rec.record(decision(i)) for i in range(200)))
    assert rec.committed == 200
    await rec.close()
    report = verify_ledger(EvidencePaths.resolve(tmp_path))
    assert report.state is LedgerState.OK and report.entries == 200


async def test_a_cancelled_caller_does_not_lose_its_queued_receipt(tmp_path: Path) -> None:
    rec = recorder(tmp_path)
    task = asyncio.create_task(rec.record(decision(0)))
    await asyncio.sleep(0)  # let it enqueue
    task.cancel()
    await rec.close()
    assert len(stored_receipts(EvidencePaths.resolve(tmp_path))) == 1


@pytest.mark.parametrize("level", ["crash_safe", "sync", "batched"])
async def test_a_bad_record_raises_and_writes_nothing(tmp_path: Path, level: str) -> None:
    """At every level the caller learns of a producer's bug (batched: before its answer goes
    out, although the receipt is built later on the writer)."""
    rec = recorder(tmp_path, durability=level)
    with pytest.raises(ReceiptError):
        await rec.record(decision(0, decision="permitted"))
    await rec.record(decision(1))
    await rec.close()
    assert len(stored_receipts(EvidencePaths.resolve(tmp_path))) == 1


async def test_a_failed_commit_fails_closed(tmp_path: Path) -> None:
    rec = recorder(tmp_path)
    await rec.record(decision(0))
    rec.ledger.store.close()  # the database goes away underneath
    with pytest.raises(EvidenceUnavailable, match="not committed"):
        await rec.record(decision(1))
    with pytest.raises(EvidenceUnavailable, match="failed earlier"):
        await rec.record(decision(2))
    await rec.close()


async def test_a_dead_writer_fails_callers_instead_of_hanging(tmp_path: Path) -> None:
    rec = recorder(tmp_path)
    await rec.record(decision(0))

    def bug(batch: object) -> None:
        raise RuntimeError("a bug in the writer")

    rec._writer._commit = bug  # type: ignore[method-assign,union-attr]
    with pytest.raises(EvidenceUnavailable, match="a bug in the writer"):
        await asyncio.wait_for(rec.record(decision(1)), 30)  # the batch in hand is failed
    with pytest.raises(EvidenceUnavailable, match="failed earlier: a bug in the writer"):
        await asyncio.wait_for(rec.record(decision(2)), 30)
    await asyncio.wait_for(rec.close(), 30)
    assert len(stored_receipts(EvidencePaths.resolve(tmp_path))) == 1


async def test_a_failing_checkpoint_does_not_fail_receipts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = recorder(tmp_path, checkpoint_every_entries=2)

    def broken(now: float | None = None) -> None:
        raise OSError("disk full while writing checkpoint.latest")

    rec.ledger.checkpoint = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="mcpward.evidence"):
        for i in range(4):
            await rec.record(decision(i))
    assert "signing a ledger checkpoint failed" in caplog.text
    await rec.record(decision(4))  # still accepted
    rec.ledger.store.close()


async def test_closed_recorder_refuses(tmp_path: Path) -> None:
    rec = recorder(tmp_path)
    await rec.close()
    await rec.close()  # idempotent
    with pytest.raises(EvidenceUnavailable, match="closed"):
        await rec.record(decision(0))


def test_disabled_evidence_gives_the_null_recorder(tmp_path: Path) -> None:
    assert isinstance(build_recorder(EvidenceSettings(enabled=False), tmp_path), NullRecorder)
    assert not (tmp_path / "evidence").exists()


async def test_restart_after_a_crash_signs_the_verified_tail(tmp_path: Path) -> None:
    rec = recorder(tmp_path, checkpoint_every_entries=4)
    paths = EvidencePaths.resolve(tmp_path)
    for i in range(6):
        await rec.record(decision(i))
    rec.ledger.close()  # "crash": no close(), no final checkpoint
    assert checkpoint_sizes(paths) == [4]
    assert verify_ledger(paths).uncheckpointed == 2
    again = recorder(tmp_path)
    assert checkpoint_sizes(paths) == [4, 6]
    await again.close()
    assert verify_ledger(paths).state is LedgerState.OK


async def test_restart_does_not_sign_a_tampered_tail(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = recorder(tmp_path, checkpoint_every_entries=4)
    paths = EvidencePaths.resolve(tmp_path)
    for i in range(6):
        await rec.record(decision(i))
    rec.ledger.close()
    with attacker(paths.ledger) as conn:
        body = rows(conn)[5][1]
        conn.execute(
            "UPDATE ledger_entries SET body = ? WHERE seq = 5", (edit_body(body, decision="deny"),)
        )
    with caplog.at_level(logging.ERROR, logger="mcpward.evidence"):
        again = recorder(tmp_path)
    assert "fail verification" in caplog.text
    assert checkpoint_sizes(paths) == [4]
    again.ledger.close()
    report = verify_ledger(paths)
    assert (report.state, report.first_bad_seq) == (LedgerState.TAMPERED, 5)


WRITER = """
import sys, time
from pathlib import Path
from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.vocabulary import EntryKind
from tests.evidence.records import decision

ledger = Ledger.open(EvidencePaths.resolve(Path(sys.argv[1])))
for i in range(int(sys.argv[2])):
    ledger.append([PendingEntry.of_receipt(build_receipt(decision(i)), time.time())])
    if i % 25 == 0:
        ledger.checkpoint()
ledger.close()
"""


def test_two_gateway_processes_share_one_ledger(tmp_path: Path) -> None:
    paths = EvidencePaths.resolve(tmp_path)
    Ledger.open(paths).close()  # keys exist before the race
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), "150"], cwd=root)
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    report = verify_ledger(paths)
    assert (report.state, report.entries) == (LedgerState.OK, 300), report.to_dict()


def test_receipt_times_are_when_the_call_arrived(tmp_path: Path) -> None:
    async def run() -> None:
        rec = recorder(tmp_path)
        await rec.record(decision(0, started_at=1_700_000_000.5))
        await rec.close()

    asyncio.run(run())
    (receipt,) = stored_receipts(EvidencePaths.resolve(tmp_path))
    assert receipt["time"] == "2023-11-14T22:13:20.500000Z"


# ---- durability levels -----------------------------------------------------------------------


@pytest.mark.parametrize("level", ["sync", "crash_safe"])
async def test_waiting_receipts_share_one_transaction(tmp_path: Path, level: str) -> None:
    """N calls answered at the same moment pay for fewer than N commits (under sync each commit
    is one fsync of the write-ahead log: group commit, as a database WAL does it)."""
    rec = recorder(tmp_path, durability=level)
    await rec.record(decision(0))  # the writer is running and idle
    commits_before = rec.commits
    await asyncio.gather(*(rec.record(decision(i)) for i in range(1, 65)))
    assert rec.committed == 65
    assert rec.commits - commits_before < 64
    await rec.close()
    assert verify_ledger(EvidencePaths.resolve(tmp_path)).state is LedgerState.OK


async def test_crash_safe_fsyncs_the_log_on_its_timer(tmp_path: Path) -> None:
    rec = recorder(tmp_path, durability="crash_safe", fsync_interval_ms=20)
    paths = EvidencePaths.resolve(tmp_path)
    await rec.record(decision(0))
    # committed before record returned (another connection sees it), not yet fsynced
    assert len(stored_receipts(paths)) == 1
    synced = rec.ledger.store.wal_syncs  # type: ignore[attr-defined]
    for _ in range(100):  # the timer fires within fsync_interval_ms of the commit
        await asyncio.sleep(0.02)
        if rec.ledger.store.wal_syncs > synced:  # type: ignore[attr-defined]
            break
    assert rec.ledger.store.wal_syncs > synced  # type: ignore[attr-defined]
    idle = rec.ledger.store.wal_syncs  # type: ignore[attr-defined]
    await asyncio.sleep(0.1)  # nothing new committed: nothing to fsync
    assert rec.ledger.store.wal_syncs == idle  # type: ignore[attr-defined]
    await rec.close()


@pytest.mark.parametrize("levels", [("crash_safe",), ("batched", "sync", "sync", "crash_safe")])
async def test_verify_and_stats_say_which_level_wrote_the_entries(
    tmp_path: Path, levels: tuple[str, ...]
) -> None:
    for level in levels:
        rec = recorder(tmp_path, durability=level)
        await rec.record(decision(1))
        await rec.close()
    report = verify_ledger(EvidencePaths.resolve(tmp_path))
    assert report.state is LedgerState.OK
    spans = report.to_dict()["durability"]
    expected = list(dict.fromkeys(levels)) if len(set(levels)) == len(levels) else None
    assert [s["level"] for s in spans] == (expected or ["batched", "sync", "crash_safe"])
    assert [s["since_seq"] for s in spans] == sorted(s["since_seq"] for s in spans)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every fdatasync the ledger makes, counted (and still made) in this process."""
    calls: list[int] = []
    real = os.fdatasync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    yield calls


@pytest.fixture
def fsync_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, list[int]]]:
    """fdatasync held until the test opens the gate: shows who waits for the disk."""
    gate = threading.Event()
    started: list[int] = []
    real = os.fdatasync

    def gated(fd: int) -> None:
        started.append(fd)
        gate.wait(60)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", gated)
    yield gate, started
    gate.set()


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(3000):  # polls; no timing assertion
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_sync_fsyncs_concurrent_callers_together(tmp_path: Path, fsyncs: list[int]) -> None:
    """64 callers waiting at the same moment share fewer than 64 fsyncs (group commit); every
    fsync covers at least one commit, and no commit waits for one it does not need."""
    rec = recorder(tmp_path, durability="sync")
    await rec.record(decision(0))  # the writer and the fsync thread are running and idle
    before, commits_before = len(fsyncs), rec.commits
    await asyncio.gather(*(rec.record(decision(i)) for i in range(1, 65)))
    made = len(fsyncs) - before
    assert rec.committed == 65
    assert 1 <= made < 64
    assert made <= rec.commits - commits_before
    assert rec.fsyncs == len(fsyncs)  # the writer's counter is the real count
    await rec.close()
    assert verify_ledger(EvidencePaths.resolve(tmp_path)).state is LedgerState.OK


async def test_sync_answers_only_after_an_fsync_that_covers_the_receipt(
    tmp_path: Path, fsync_gate: tuple[threading.Event, list[int]]
) -> None:
    gate, started = fsync_gate
    rec = recorder(tmp_path, durability="sync")
    paths = EvidencePaths.resolve(tmp_path)
    call = asyncio.create_task(rec.record(decision(0)))
    await until(lambda: bool(started))  # committed, and its fsync has begun
    assert len(stored_receipts(paths)) == 1  # in the write-ahead log, not yet on the disk
    await asyncio.sleep(0.1)
    assert not call.done()  # the answer waits for the disk
    gate.set()
    await asyncio.wait_for(call, 60)
    await rec.close()


async def test_crash_safe_answers_before_the_fsync(
    tmp_path: Path, fsync_gate: tuple[threading.Event, list[int]]
) -> None:
    gate, started = fsync_gate
    rec = recorder(tmp_path, durability="crash_safe", fsync_interval_ms=1)
    paths = EvidencePaths.resolve(tmp_path)
    await asyncio.wait_for(rec.record(decision(0)), 60)  # answered with no fsync done
    assert len(stored_receipts(paths)) == 1  # another connection (as after kill -9) sees it
    await until(lambda: bool(started))  # the timer's fsync, held at the gate
    await asyncio.wait_for(rec.record(decision(1)), 60)  # a held fsync holds no answer
    gate.set()
    await rec.close()
    assert verify_ledger(paths).entries == 2


async def test_crash_safe_fsync_timer_counts_real_fsyncs(tmp_path: Path, fsyncs: list[int]) -> None:
    """Receipts keep coming for a while: they are fsynced on the timer, far fewer times than
    there are receipts, and never while the ledger is idle."""
    rec = recorder(tmp_path, durability="crash_safe", fsync_interval_ms=20)
    await rec.record(decision(0))
    await until(lambda: len(fsyncs) >= 1)
    before = len(fsyncs)
    for i in range(100):
        await rec.record(decision(i))
        await asyncio.sleep(0.002)
    settled = -1
    while settled != len(fsyncs):  # the last commits' fsync comes within an interval
        settled = len(fsyncs)
        await asyncio.sleep(0.1)
    made = len(fsyncs) - before
    assert 1 <= made < 100
    await asyncio.sleep(0.2)  # ten intervals with nothing committed: nothing to fsync
    assert len(fsyncs) <= settled + 1  # (+1: one still due, should the fsync thread be slow)
    await rec.close()


async def test_batched_does_not_fsync_per_batch(tmp_path: Path, fsyncs: list[int]) -> None:
    rec = recorder(tmp_path, durability="batched", batch_interval_ms=1)
    for i in range(50):
        await rec.record(decision(i))
        await asyncio.sleep(0.002)
    await until(lambda: rec.committed == 50)
    assert fsyncs == []  # the answers went out first; SQLite's own checkpoints fsync the log
    await rec.close()
    assert len(fsyncs) >= 1  # the clean shutdown makes everything durable
