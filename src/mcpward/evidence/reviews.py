"""Operator decisions on HOLDs (accept, keep held) as ledger entries of kind `review`.

An entry carries the operator's identity, the item, both hashes and the stated reason; no contract.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.store import StoredEntry
from mcpward.evidence.vocabulary import EntryKind

MAX_REASON = 500
MAX_OPERATOR = 64


class ReviewAction(StrEnum):
    ACCEPT = "accept"
    KEEP_HELD = "keep_held"


@dataclass(frozen=True, slots=True)
class ReviewEvent:
    """One operator decision on one held item."""

    action: ReviewAction
    upstream: str
    item_kind: str
    item: str
    old_hash: str | None
    new_hash: str | None
    operator: str
    reason: str

    def to_event(self) -> dict[str, Any]:
        return {
            "action": self.action.value,
            "upstream": self.upstream,
            "item_kind": self.item_kind,
            "item": self.item,
            "old_hash": self.old_hash,
            "new_hash": self.new_hash,
            "operator": self.operator[:MAX_OPERATOR],
            "reason": self.reason[:MAX_REASON],
        }


def record_reviews(ledger: Ledger, events: Iterable[ReviewEvent], now: float | None = None) -> int:
    """Append one `review` entry per event in one transaction; returns the first seq (-1: none)."""
    stamp = time.time() if now is None else now
    pending = [PendingEntry(EntryKind.REVIEW, stamp, event=e.to_event()) for e in events]
    sealed = ledger.append(pending)
    return sealed[0].seq if sealed else -1


def read_reviews(entries: Iterable[StoredEntry]) -> list[dict[str, Any]]:
    """The `review` events among ledger entries, each with its seq and time."""
    found = []
    for stored in entries:
        entry = orjson.loads(stored.body)
        if entry.get("kind") == EntryKind.REVIEW.value and isinstance(entry.get("event"), dict):
            found.append({"seq": stored.seq, "time": entry.get("time"), **entry["event"]})
    return found
