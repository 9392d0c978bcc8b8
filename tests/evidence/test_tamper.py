"""The tamper table: every way of rewriting history, each reported with its exact state.

A 20-entry ledger with signed checkpoints at 10 and 20; `verify_ledger` as the key holder (HMACs
checked) unless a case says outsider (public key and checkpoints only). Every case that edits the
stored ledger runs against the SQLite file and against the fleet's PostgreSQL tables.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import orjson
import psycopg
import pytest

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.checkpoint import Checkpoint
from mcpward.evidence.keyring import HmacKeyring, load_or_create_signer
from mcpward.evidence.note import NoteSigner
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.verify import VerifyReport
from mcpward.evidence.vocabulary import LedgerState, VerifyReason
from mcpward.protocol.canonical import canonical_bytes
from tests.store.pg import pg_context

from .records import decision
from .tamper import (
    PG_LEDGERS,
    attacker,
    edit_body,
    make_ledger,
    open_ledger,
    pg_evidence,
    rewrite,
    rows,
    set_seq,
    verify,
)


@pytest.fixture(params=["sqlite", "postgres"])
def paths(tmp_path: Path, request: pytest.FixtureRequest) -> EvidencePaths:
    if request.param == "sqlite":
        return make_ledger(tmp_path / "state")
    context = pg_context(request.getfixturevalue("pg_dsn"), tmp_path)
    return make_ledger(context.state_dir, paths=pg_evidence(context, tmp_path))


def hmac_key(paths: EvidencePaths) -> bytes:
    keyring = HmacKeyring(paths.keys)
    key = keyring.get(keyring.ids()[0])
    assert key is not None
    return key


def outsider(paths: EvidencePaths, tmp_path: Path) -> VerifyReport:
    """Verify as someone holding only the public key published earlier (no HMAC keys)."""
    published = tmp_path / "published.pub"
    if not published.exists():
        shutil.copy(paths.public_key, published)
    return verify(paths, public_keys=[published], use_hmac=False)


def expect(
    report: VerifyReport, state: LedgerState, reason: VerifyReason, first_bad: int | None
) -> None:
    assert (report.state, report.reason, report.first_bad_seq) == (state, reason, first_bad), (
        report.to_dict()
    )


def test_untouched_ledger_is_ok_for_key_holder_and_outsider(
    paths: EvidencePaths, tmp_path: Path
) -> None:
    report = verify(paths)
    expect(report, LedgerState.OK, VerifyReason.OK, None)
    assert report.entries == 20 and report.hmac_checked and report.verified_through == 20
    report = outsider(paths, tmp_path)
    expect(report, LedgerState.OK, VerifyReason.OK, None)
    assert not report.hmac_checked and report.verified_through == 20


def test_edit_without_fixing_hashes(paths: EvidencePaths, tmp_path: Path) -> None:
    with attacker(paths.ledger) as conn:
        body = rows(conn)[7][1]
        conn.execute(
            "UPDATE ledger_entries SET body = ? WHERE seq = 7", (edit_body(body, decision="deny"),)
        )
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.ENTRY_HASH_MISMATCH, 7)
    expect(outsider(paths, tmp_path), LedgerState.TAMPERED, VerifyReason.ENTRY_HASH_MISMATCH, 7)


def test_edit_with_recomputed_chain_but_no_hmac_key(paths: EvidencePaths, tmp_path: Path) -> None:
    outsider(paths, tmp_path)  # publish the key before the attack
    with attacker(paths.ledger) as conn:
        current = [(s, b) for s, b, *_ in rows(conn)]
        current[15] = (15, edit_body(current[15][1], decision="deny"))
        rewrite(conn, current)
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_MISMATCH, 15)
    # The outsider cannot see HMACs: the checkpoint at 10 still matches, the one at 20 does not.
    expect(
        outsider(paths, tmp_path), LedgerState.TAMPERED, VerifyReason.CHECKPOINT_HEAD_MISMATCH, 10
    )


def test_edit_with_a_stolen_hmac_key_is_caught_by_the_signed_checkpoint(
    paths: EvidencePaths,
) -> None:
    key = hmac_key(paths)
    with attacker(paths.ledger) as conn:
        current = [(s, b) for s, b, *_ in rows(conn)]
        current[3] = (3, edit_body(current[3][1], decision="allow", stopped_by=None))
        rewrite(conn, current, key=key)
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.CHECKPOINT_HEAD_MISMATCH, 0)


def test_delete_a_middle_entry(paths: EvidencePaths) -> None:
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq = 5")
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.SEQUENCE_GAP, 5)


def test_delete_a_middle_entry_and_renumber(paths: EvidencePaths, tmp_path: Path) -> None:
    outsider(paths, tmp_path)
    with attacker(paths.ledger) as conn:
        kept = [b for s, b, *_ in rows(conn) if s != 5]
        rewrite(conn, [(n, set_seq(b, n)) for n, b in enumerate(kept)])
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_MISMATCH, 5)
    expect(
        outsider(paths, tmp_path), LedgerState.TAMPERED, VerifyReason.CHECKPOINT_HEAD_MISMATCH, 0
    )


def test_delete_the_tail(paths: EvidencePaths) -> None:
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq >= 17")
    report = verify(paths)
    expect(report, LedgerState.TRUNCATED, VerifyReason.FEWER_ENTRIES_THAN_CHECKPOINT, 17)
    assert report.checkpoint_size == 20 and report.entries == 17


def test_delete_the_tail_and_its_stored_checkpoints_needs_a_published_checkpoint(
    paths: EvidencePaths, tmp_path: Path
) -> None:
    published = paths.latest_checkpoint.read_text(encoding="utf-8")  # exported at size 20
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq >= 12")
        conn.execute("DELETE FROM ledger_checkpoints WHERE size > 12")
    # With only what is left in the state dir, a cut at a checkpoint boundary looks complete:
    # that is why checkpoints are exported and published elsewhere.
    assert verify(paths).state is LedgerState.OK
    report = verify(paths, checkpoint_notes=[published])
    expect(report, LedgerState.TRUNCATED, VerifyReason.FEWER_ENTRIES_THAN_CHECKPOINT, 12)


def test_reorder_two_entries(paths: EvidencePaths) -> None:
    with attacker(paths.ledger) as conn:
        current = rows(conn)
        conn.execute("DELETE FROM ledger_entries WHERE seq IN (4, 5)")
        for seq, source in ((4, current[5]), (5, current[4])):
            conn.execute(
                "INSERT INTO ledger_entries VALUES (?, ?, ?, ?, ?)",
                (seq, source[1], source[2], source[3], source[4]),
            )
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.SEQUENCE_MISMATCH, 4)


def test_reorder_with_renumbered_and_rechained_entries(paths: EvidencePaths) -> None:
    with attacker(paths.ledger) as conn:
        bodies = [b for _, b, *_ in rows(conn)]
        bodies[4], bodies[5] = bodies[5], bodies[4]
        rewrite(conn, [(n, set_seq(b, n)) for n, b in enumerate(bodies)])
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_MISMATCH, 4)


def test_insert_an_entry_in_the_middle(paths: EvidencePaths, tmp_path: Path) -> None:
    outsider(paths, tmp_path)
    with attacker(paths.ledger) as conn:
        bodies = [b for _, b, *_ in rows(conn)]
        bodies.insert(8, edit_body(bodies[0], receipt_id="0" * 28))
        rewrite(conn, [(n, set_seq(b, n)) for n, b in enumerate(bodies)])
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_MISMATCH, 8)
    expect(
        outsider(paths, tmp_path), LedgerState.TAMPERED, VerifyReason.CHECKPOINT_HEAD_MISMATCH, 0
    )


def test_append_a_forged_entry_after_the_last_checkpoint(
    paths: EvidencePaths, tmp_path: Path
) -> None:
    outsider(paths, tmp_path)
    with attacker(paths.ledger) as conn:
        bodies = [b for _, b, *_ in rows(conn)]
        rewrite(
            conn,
            [(n, b) for n, b in enumerate(bodies)]
            + [(20, set_seq(edit_body(bodies[0], receipt_id="1" * 28), 20))],
        )
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_MISMATCH, 20)
    # Without HMAC keys, entries after the last checkpoint are reported as not yet covered.
    report = outsider(paths, tmp_path)
    expect(report, LedgerState.OK, VerifyReason.OK, None)
    assert report.verified_through == 20 and report.uncheckpointed == 1


def test_forged_checkpoint_with_a_bad_signature(paths: EvidencePaths, tmp_path: Path) -> None:
    signer = load_or_create_signer(paths.keys, paths.public_key)
    genuine = signer.sign(Checkpoint("x", 1, bytes(32), 0).text())
    signature_line = genuine.splitlines()[-1]
    name, blob = signature_line[2:].split(" ")
    forged_blob = blob[:10] + ("A" if blob[10] != "A" else "B") + blob[11:]
    with open_ledger(paths).store.reading() as view:
        origin = f"mcpward.local/ledger/{view.ledger_id()}"
    body = Checkpoint(origin, 25, bytes(32), int(time.time())).text()
    forged = f"{body}\n\u2014 {name} {forged_blob}\n"
    report = verify(paths, checkpoint_notes=[forged])
    expect(report, LedgerState.TAMPERED, VerifyReason.CHECKPOINT_SIGNATURE_INVALID, None)


def test_forged_checkpoint_signed_by_another_key(paths: EvidencePaths) -> None:
    impostor = NoteSigner.from_seed(
        load_or_create_signer(paths.keys, paths.public_key).name, b"\x07" * 32
    )
    forged = impostor.sign(Checkpoint("mcpward.local/ledger/whatever", 25, bytes(32), 0).text())
    report = verify(paths, checkpoint_notes=[forged])
    expect(report, LedgerState.TAMPERED, VerifyReason.CHECKPOINT_KEY_UNKNOWN, None)


def test_genuine_checkpoint_of_another_ledger(paths: EvidencePaths, tmp_path: Path) -> None:
    other = replace(paths, ledger=tmp_path / "other.sqlite")  # same keys, another ledger
    ledger = open_ledger(other)
    ledger.append([PendingEntry.of_receipt(build_receipt(decision(0)), time.time())])
    signed = ledger.checkpoint()
    ledger.close()
    assert signed is not None
    report = verify(paths, checkpoint_notes=[signed.note])
    expect(report, LedgerState.TAMPERED, VerifyReason.CHECKPOINT_ORIGIN_MISMATCH, None)


def test_swapped_hmac_key_file(paths: EvidencePaths) -> None:
    key_file = next(paths.keys.glob("hmac-*.key"))
    key_file.write_bytes(b"\x01" * 32)
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_KEY_UNKNOWN, 0)


def test_swapped_signing_key_pair(paths: EvidencePaths, tmp_path: Path) -> None:
    outsider(paths, tmp_path)  # the original public key, published before the swap
    (paths.keys / "signing.key").unlink()
    paths.public_key.unlink()
    load_or_create_signer(paths.keys, paths.public_key)  # a new pair in the same place
    # The stored checkpoints were signed by the original key: under the new one they are unknown.
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.CHECKPOINT_KEY_UNKNOWN, None)


def test_full_rewrite_with_the_attackers_own_keys(paths: EvidencePaths, tmp_path: Path) -> None:
    outsider(paths, tmp_path)  # the original public key, published before the attack
    shutil.rmtree(paths.keys)
    paths.public_key.unlink()
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries")
        conn.execute("DELETE FROM ledger_checkpoints")
    forged = open_ledger(paths)  # new HMAC and signing keys, a fresh history
    forged.append(
        [PendingEntry.of_receipt(build_receipt(decision(i)), time.time()) for i in range(20)]
    )
    forged.checkpoint()
    forged.close()
    # Internally consistent with the new keys...
    assert verify(paths).state is LedgerState.OK
    # ...but not under the public key that was published before.
    report = outsider(paths, tmp_path)
    expect(report, LedgerState.TAMPERED, VerifyReason.CHECKPOINT_KEY_UNKNOWN, None)


def test_key_rotation_is_recorded_and_old_entries_stay_verifiable(paths: EvidencePaths) -> None:
    ledger = open_ledger(paths)
    rotation = ledger.rotate_key()
    ledger.append(
        [PendingEntry.of_receipt(build_receipt(decision(i)), time.time()) for i in range(3)]
    )
    ledger.checkpoint()
    ledger.close()
    assert rotation.seq == 20 and rotation.old_key_id != rotation.new_key_id
    report = verify(paths)
    expect(report, LedgerState.OK, VerifyReason.OK, None)
    assert report.entries == 24
    # Losing the old key makes the old entries unverifiable for the key holder.
    (paths.keys / f"hmac-{rotation.old_key_id}.key").unlink()
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.HMAC_KEY_UNKNOWN, 0)


def test_an_entry_claiming_a_different_key_without_a_rotation(paths: EvidencePaths) -> None:
    ledger = open_ledger(paths)
    ledger.keyring.create()  # a second key exists, but the chain never rotated to it
    new_key = ledger.keyring.active_id()
    ledger.close()
    with attacker(paths.ledger) as conn:
        bodies = [b for _, b, *_ in rows(conn)]
        entry = orjson.loads(bodies[9])
        entry["key_id"] = new_key
        bodies[9] = canonical_bytes(entry)
        rewrite(conn, list(enumerate(bodies)))
    expect(verify(paths), LedgerState.TAMPERED, VerifyReason.KEY_ID_MISMATCH, 9)


def test_empty_and_unsigned(tmp_path: Path) -> None:
    paths = EvidencePaths.resolve(tmp_path)
    ledger = open_ledger(paths)
    expect(verify(paths), LedgerState.EMPTY, VerifyReason.NO_ENTRIES, None)
    ledger.append([PendingEntry.of_receipt(build_receipt(decision(0)), time.time())])
    ledger.close()
    report = verify(paths)
    expect(report, LedgerState.UNSIGNED, VerifyReason.NO_CHECKPOINT, None)
    assert report.hmac_checked and report.uncheckpointed == 1


def test_emptied_ledger_with_a_checkpoint_is_truncated(paths: EvidencePaths) -> None:
    with attacker(paths.ledger) as conn:
        conn.execute("DELETE FROM ledger_entries")
    expect(verify(paths), LedgerState.TRUNCATED, VerifyReason.FEWER_ENTRIES_THAN_CHECKPOINT, 0)


def test_the_append_only_triggers_refuse_casual_edits(paths: EvidencePaths) -> None:
    context = PG_LEDGERS.get(paths.ledger)
    if context is not None:
        assert isinstance(context.settings.dsn, str)
        with psycopg.connect(context.settings.dsn, autocommit=True) as pg:
            for statement in (
                "DELETE FROM ledger_entries WHERE seq = 1",
                "UPDATE ledger_entries SET hmac = '\\x00' WHERE seq = 1",
                "TRUNCATE ledger_entries",
                "DELETE FROM ledger_checkpoints",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                    pg.execute(statement)
        return
    conn = sqlite3.connect(paths.ledger)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM ledger_entries WHERE seq = 1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE ledger_entries SET hmac = x'00' WHERE seq = 1")
    conn.close()
