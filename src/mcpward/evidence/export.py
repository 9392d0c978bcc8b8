"""Exports: JSON Lines for SIEM ingestion (verifiable on their own) and one file per receipt.

A JSONL line is the ledger entry plus `entry_hash`, `prev_hash` and `hmac` (hex); removing those
three and taking canonical JSON gives back the exact bytes that were hashed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from mcpward.evidence.chain import ZERO_HASH
from mcpward.evidence.receipt import RECEIPT_ID
from mcpward.evidence.store import LedgerView, StoredEntry
from mcpward.evidence.vocabulary import EntryKind
from mcpward.protocol.canonical import canonical_bytes

CHAIN_FIELDS = ("entry_hash", "prev_hash", "hmac")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class ExportError(ValueError):
    """An export file or option that cannot be used."""


def parse_since(text: str, now: float) -> float:
    """`30m`, `24h`, `7d`, `2w` (ago), or an ISO 8601 date/time (UTC unless it says otherwise)."""
    matched = _DURATION.match(text.strip())
    if matched:
        return now - float(matched.group(1)) * _UNIT_SECONDS[matched.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ExportError(
            f"--since {text!r}: give a duration such as 24h or 7d, or a date such as 2026-11-01"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def export_record(stored: StoredEntry, prev_hash: bytes) -> dict[str, Any]:
    entry: dict[str, Any] = orjson.loads(stored.body)
    entry["entry_hash"] = stored.entry_hash.hex()
    entry["prev_hash"] = prev_hash.hex()
    entry["hmac"] = stored.hmac.hex()
    return entry


def _previous_hash(view: LedgerView, seq: int) -> bytes:
    if seq == 0:
        return ZERO_HASH
    before = list(view.entries(start_seq=seq - 1, limit=1))
    if not before or before[0].seq != seq - 1:
        return ZERO_HASH  # the entry before is gone; verification of the export will say so
    return before[0].entry_hash


def export_jsonl(view: LedgerView, out: IO[bytes], since: float | None = None) -> int:
    """Write entries (all, or those recorded at/after `since`) as JSON Lines; returns the count."""
    count = 0
    prev: bytes | None = None
    for stored in view.entries(since=since):
        if prev is None:
            prev = _previous_hash(view, stored.seq)
        out.write(orjson.dumps(export_record(stored, prev)) + b"\n")
        prev = stored.entry_hash
        count += 1
    return count


@dataclass(slots=True)
class JsonlLedger:
    """A JSONL export read back for verification."""

    entries: list[StoredEntry]
    start_seq: int
    start_prev: bytes


def _unhex(value: Any, field: str, line: int) -> bytes:
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise ExportError(f"line {line}: {field} is not hex") from None


def read_jsonl(path: Path) -> JsonlLedger:
    entries: list[StoredEntry] = []
    start_prev = ZERO_HASH
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ExportError(f"{path} line {number}: not JSON: {exc}") from None
            if not isinstance(record, dict) or not all(f in record for f in CHAIN_FIELDS):
                raise ExportError(f"{path} line {number}: not a ledger export line")
            digest = _unhex(record.pop("entry_hash"), "entry_hash", number)
            prev = _unhex(record.pop("prev_hash"), "prev_hash", number)
            mac = _unhex(record.pop("hmac"), "hmac", number)
            if not entries:
                start_prev = prev
            seq = record.get("seq")
            moment = record.get("time")
            try:
                recorded = datetime.fromisoformat(str(moment)).timestamp()
            except ValueError:
                recorded = 0.0
            entries.append(
                StoredEntry(
                    seq if isinstance(seq, int) else -1,
                    canonical_bytes(record),
                    digest,
                    mac,
                    recorded,
                )
            )
    return JsonlLedger(entries, entries[0].seq if entries else 0, start_prev)


def iter_receipts(view: LedgerView, since: float | None = None) -> Iterator[dict[str, Any]]:
    for stored in view.entries(since=since):
        entry = orjson.loads(stored.body)
        if entry.get("kind") == EntryKind.RECEIPT.value:
            yield entry["receipt"]


def export_receipt_files(view: LedgerView, directory: Path, since: float | None = None) -> int:
    """Write `<receipt_id>.json` (canonical JSON) per receipt; returns the count."""
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for receipt in iter_receipts(view, since):
        if not RECEIPT_ID.match(str(receipt.get("receipt_id"))):
            raise ExportError(
                f"a receipt id {receipt.get('receipt_id')!r} is not a receipt id; "
                "run `mcpward ledger verify`"
            )
        (directory / f"{receipt['receipt_id']}.json").write_bytes(canonical_bytes(receipt))
        count += 1
    return count
