"""Ledger verification: walk the chain, check HMACs (key holder), checkpoints (public key), files.

States: ok, tampered (first bad seq), truncated, unsigned, empty; receipt files: ok, missing,
tampered, not_linked. The first problem found decides; see docs/evidence.md for the table.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpward.evidence.chain import ZERO_HASH, chain_hash
from mcpward.evidence.checkpoint import Checkpoint, CheckpointError, open_checkpoint
from mcpward.evidence.keyring import HmacKeyring, entry_hmac
from mcpward.evidence.note import NoteError, VerifierKey
from mcpward.evidence.store import StoredEntry
from mcpward.evidence.vocabulary import EntryKind, LedgerState, ReceiptIntegrity, VerifyReason
from mcpward.protocol.canonical import canonical_bytes

_NOTE_REASONS = {
    "malformed": VerifyReason.CHECKPOINT_MALFORMED,
    "unknown_key": VerifyReason.CHECKPOINT_KEY_UNKNOWN,
    "bad_signature": VerifyReason.CHECKPOINT_SIGNATURE_INVALID,
}


@dataclass(slots=True)
class ReceiptFilesReport:
    """Receipt files in a directory against the receipt hashes the ledger anchors."""

    state: ReceiptIntegrity
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    tampered: list[str] = field(default_factory=list)
    not_linked: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "checked": self.checked,
            "missing": self.missing[:20],
            "tampered": self.tampered[:20],
            "not_linked": self.not_linked[:20],
            "counts": {
                "missing": len(self.missing),
                "tampered": len(self.tampered),
                "not_linked": len(self.not_linked),
            },
        }


@dataclass(slots=True)
class VerifyReport:
    state: LedgerState
    reason: VerifyReason
    message: str
    entries: int
    first_bad_seq: int | None = None
    hmac_checked: bool = False
    checkpoints_valid: int = 0
    checkpoint_size: int | None = None  # the largest size a valid checkpoint commits to
    verified_through: int | None = None  # entries [start, n) are anchored by a signed checkpoint
    # entries after the last valid checkpoint (HMAC-checked only, if at all)
    uncheckpointed: int = 0
    receipt_files: ReceiptFilesReport | None = None
    # which durability level wrote which entries: [(since_seq, level)], oldest first
    durability: list[tuple[int, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        files_ok = self.receipt_files is None or self.receipt_files.state is ReceiptIntegrity.OK
        return self.state is LedgerState.OK and files_ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "reason": self.reason.value,
            "message": self.message,
            "entries": self.entries,
            "first_bad_seq": self.first_bad_seq,
            "hmac_checked": self.hmac_checked,
            "checkpoints_valid": self.checkpoints_valid,
            "checkpoint_size": self.checkpoint_size,
            "verified_through": self.verified_through,
            "uncheckpointed": self.uncheckpointed,
            "receipt_integrity": self.receipt_files.to_dict() if self.receipt_files else None,
            "durability": [{"since_seq": seq, "level": level} for seq, level in self.durability],
        }


@dataclass(slots=True)
class _Problem:
    reason: VerifyReason
    message: str
    seq: int | None


class LedgerVerifier:
    """Verifies one ledger's entries against checkpoints (public keys) and HMACs (key holder).

    `origin` is the checkpoint origin this ledger must carry (None: take it from the checkpoints,
    which must then all agree). `keyring=None` verifies as an outsider: no HMACs are checked.
    """

    def __init__(
        self,
        *,
        verifiers: Sequence[VerifierKey],
        keyring: HmacKeyring | None = None,
        origin: str | None = None,
    ) -> None:
        self.verifiers = list(verifiers)
        self.keyring = keyring
        self.origin = origin

    def _open_checkpoints(self, notes: Iterable[str]) -> tuple[list[Checkpoint], _Problem | None]:
        valid: list[Checkpoint] = []
        problem: _Problem | None = None
        origin = self.origin
        for note in notes:
            try:
                cp = open_checkpoint(note, self.verifiers)
            except NoteError as exc:
                problem = problem or _Problem(_NOTE_REASONS[exc.reason], f"checkpoint: {exc}", None)
                continue
            except CheckpointError as exc:
                problem = problem or _Problem(
                    VerifyReason.CHECKPOINT_MALFORMED, f"checkpoint: {exc}", None
                )
                continue
            if origin is None:
                origin = cp.origin
            if cp.origin != origin:
                problem = problem or _Problem(
                    VerifyReason.CHECKPOINT_ORIGIN_MISMATCH,
                    f"checkpoint is for {cp.origin!r}, this ledger is {origin!r}",
                    None,
                )
                continue
            valid.append(cp)
        return valid, problem

    def verify(
        self,
        entries: Iterable[StoredEntry],
        checkpoints: Iterable[str] = (),
        *,
        start_seq: int | None = 0,
        start_prev: bytes = ZERO_HASH,
        receipts_dir: Path | None = None,
        receipts_since: float | None = None,
    ) -> VerifyReport:
        if self.verifiers:
            valid, cp_problem = self._open_checkpoints(checkpoints)
        else:
            valid, cp_problem = [], None
        heads: dict[int, list[bytes]] = {}
        for cp in valid:
            heads.setdefault(cp.size, []).append(cp.head_hash)

        prev = start_prev
        # None: a partial export starts where its first line is
        expected_seq: int | None = start_seq
        first_seq = start_seq or 0
        expected_key: str | None = None
        problem: _Problem | None = None
        anchored_through: int | None = None
        anchored: dict[str, str] = {}
        count = 0
        for stored in entries:
            if expected_seq is None:
                expected_seq = first_seq = stored.seq
            problem, key_after = self._check_entry(
                stored, expected_seq, prev, expected_key, anchored, receipts_since
            )
            if problem is not None:
                break
            expected_key = key_after
            prev = stored.entry_hash
            expected_seq += 1
            count += 1
            for head in heads.get(expected_seq, ()):
                if head != prev:
                    lower = anchored_through if anchored_through is not None else first_seq
                    problem = _Problem(
                        VerifyReason.CHECKPOINT_HEAD_MISMATCH,
                        f"the chain's head at size {expected_seq} differs from the signed "
                        "checkpoint; "
                        f"entries from seq {lower} on are not the ones that were signed",
                        lower,
                    )
                    break
            else:
                if expected_seq in heads:
                    anchored_through = expected_seq
            if problem is not None:
                break
        end = (expected_seq if expected_seq is not None else 0) if problem is None else None
        report = self._conclude(problem, cp_problem, valid, end, count, anchored_through)
        if receipts_dir is not None:
            report.receipt_files = check_receipt_files(receipts_dir, anchored)
        return report

    def _check_entry(
        self,
        stored: StoredEntry,
        expected_seq: int,
        prev: bytes,
        expected_key: str | None,
        anchored: dict[str, str],
        receipts_since: float | None,
    ) -> tuple[_Problem | None, str | None]:
        seq = stored.seq
        if seq > expected_seq:
            return _Problem(
                VerifyReason.SEQUENCE_GAP, f"entry {expected_seq} is missing", expected_seq
            ), None
        if seq < expected_seq:
            return _Problem(
                VerifyReason.SEQUENCE_MISMATCH, f"entry {seq} is out of order", seq
            ), None
        try:
            entry = orjson.loads(stored.body)
            kind = EntryKind(entry["kind"])
            key_id = entry["key_id"]
            body_seq = entry["seq"]
            if not isinstance(key_id, str) or not isinstance(body_seq, int):
                raise TypeError("key_id or seq has the wrong type")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            return _Problem(
                VerifyReason.MALFORMED_ENTRY, f"entry {seq} is malformed: {exc}", seq
            ), None
        if body_seq != seq:
            return _Problem(
                VerifyReason.SEQUENCE_MISMATCH,
                f"entry stored at {seq} says it is entry {body_seq}",
                seq,
            ), None
        if not hmac.compare_digest(chain_hash(prev, stored.body), stored.entry_hash):
            return _Problem(
                VerifyReason.ENTRY_HASH_MISMATCH,
                f"entry {seq}'s hash does not follow from the previous hash and its content",
                seq,
            ), None
        if expected_key is not None and key_id != expected_key:
            return _Problem(
                VerifyReason.KEY_ID_MISMATCH,
                f"entry {seq} uses key {key_id}, the chain says {expected_key}",
                seq,
            ), None
        if self.keyring is not None:
            key = self.keyring.get(key_id)
            if not stored.hmac:
                return _Problem(VerifyReason.HMAC_MISSING, f"entry {seq} has no HMAC", seq), None
            if key is None:
                return _Problem(
                    VerifyReason.HMAC_KEY_UNKNOWN,
                    f"entry {seq} names HMAC key {key_id}, which is not in {self.keyring.where}",
                    seq,
                ), None
            if not hmac.compare_digest(entry_hmac(key, stored.entry_hash), stored.hmac):
                return _Problem(
                    VerifyReason.HMAC_MISMATCH, f"entry {seq}'s HMAC does not verify", seq
                ), None
        key_after = key_id
        if kind is EntryKind.RECEIPT:
            receipt = entry.get("receipt")
            claimed = entry.get("receipt_hash")
            try:
                actual = hashlib.sha256(canonical_bytes(receipt)).hexdigest()
            except (TypeError, ValueError):
                actual = ""
            if not isinstance(receipt, dict) or actual != claimed:
                return _Problem(
                    VerifyReason.RECEIPT_HASH_MISMATCH,
                    f"entry {seq}'s receipt does not hash to its receipt_hash",
                    seq,
                ), None
            if receipts_since is None or stored.recorded_at >= receipts_since:
                anchored[str(receipt.get("receipt_id"))] = actual
        elif kind is EntryKind.KEY_ROTATION:
            new_key = (
                entry.get("event", {}).get("new_key_id")
                if isinstance(entry.get("event"), dict)
                else None
            )
            if not isinstance(new_key, str):
                return _Problem(
                    VerifyReason.MALFORMED_ENTRY, f"entry {seq}: rotation names no new key", seq
                ), None
            key_after = new_key
        return None, key_after

    def _conclude(
        self,
        problem: _Problem | None,
        cp_problem: _Problem | None,
        valid: list[Checkpoint],
        end: int | None,
        count: int,
        anchored_through: int | None,
    ) -> VerifyReport:
        hmac_checked = self.keyring is not None
        largest = max((cp.size for cp in valid), default=None)
        common: dict[str, Any] = {
            "hmac_checked": hmac_checked,
            "checkpoints_valid": len(valid),
            "checkpoint_size": largest,
        }
        if problem is not None:
            return VerifyReport(
                LedgerState.TAMPERED, problem.reason, problem.message, count, problem.seq, **common
            )
        if cp_problem is not None:
            return VerifyReport(
                LedgerState.TAMPERED, cp_problem.reason, cp_problem.message, count, **common
            )
        assert end is not None
        if largest is not None and largest > end:
            return VerifyReport(
                LedgerState.TRUNCATED,
                VerifyReason.FEWER_ENTRIES_THAN_CHECKPOINT,
                f"a signed checkpoint commits to {largest} entries; the ledger has {end}",
                count,
                end,
                **common,
            )
        if count == 0:
            return VerifyReport(
                LedgerState.EMPTY, VerifyReason.NO_ENTRIES, "the ledger has no entries", 0, **common
            )
        if anchored_through is None:
            why = (
                "no public key to check checkpoints with"
                if not self.verifiers
                else "no signed checkpoint"
            )
            extra = "; HMACs of all entries verify" if hmac_checked else ""
            return VerifyReport(
                LedgerState.UNSIGNED,
                VerifyReason.NO_CHECKPOINT,
                f"{why} covers these {count} entries{extra}",
                count,
                uncheckpointed=count,
                **common,
            )
        tail = end - anchored_through
        if hmac_checked:
            message = (
                f"{count} entries; chain and every HMAC verify; checkpoint at {anchored_through}"
            )
        else:
            message = (
                f"{count} entries; the chain up to {anchored_through} matches the signed checkpoint"
                + (f"; {tail} later entries are not yet covered by a checkpoint" if tail else "")
            )
        return VerifyReport(
            LedgerState.OK,
            VerifyReason.OK,
            message,
            count,
            verified_through=anchored_through,
            uncheckpointed=tail,
            **common,
        )


def receipt_file_hash(path: Path) -> str | None:
    """SHA-256 of a receipt file's canonical JSON (None if it is not JSON)."""
    try:
        return hashlib.sha256(canonical_bytes(orjson.loads(path.read_bytes()))).hexdigest()
    except (OSError, orjson.JSONDecodeError, TypeError, ValueError):
        return None


def check_receipt_files(directory: Path, anchored: dict[str, str]) -> ReceiptFilesReport:
    """Compare `<receipt_id>.json` files with the ledger's anchored receipt hashes."""
    on_disk = {p.stem: p for p in directory.glob("*.json")} if directory.is_dir() else {}
    report = ReceiptFilesReport(ReceiptIntegrity.OK)
    for receipt_id, digest in anchored.items():
        path = on_disk.get(receipt_id)
        if path is None:
            report.missing.append(receipt_id)
            continue
        report.checked += 1
        if receipt_file_hash(path) != digest:
            report.tampered.append(receipt_id)
    report.not_linked = sorted(set(on_disk) - set(anchored))
    if report.tampered:
        report.state = ReceiptIntegrity.TAMPERED
    elif report.missing:
        report.state = ReceiptIntegrity.MISSING
    elif report.not_linked:
        report.state = ReceiptIntegrity.NOT_LINKED
    return report
