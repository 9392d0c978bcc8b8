"""Tier-3 verdicts (`mcpward validate`) as ledger entries of kind `validation`.

An entry carries the verdict, its observations and provenance (case labels, paths, addresses,
schema keywords: never arguments or results).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import orjson

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.store import StoredEntry
from mcpward.evidence.vocabulary import EntryKind


def record_validation(ledger: Ledger, event: dict[str, Any], now: float | None = None) -> int:
    """Append one `validation` entry; returns its seq."""
    stamp = time.time() if now is None else now
    sealed = ledger.append([PendingEntry(EntryKind.VALIDATION, stamp, event=event)])
    return sealed[0].seq


def read_validations(entries: Iterable[StoredEntry]) -> list[dict[str, Any]]:
    """The `validation` events among ledger entries, each with its seq and time."""
    found = []
    for stored in entries:
        entry = orjson.loads(stored.body)
        if entry.get("kind") == EntryKind.VALIDATION.value and isinstance(entry.get("event"), dict):
            found.append({"seq": stored.seq, "time": entry.get("time"), **entry["event"]})
    return found
