"""Consult verdicts by contract change: a bounded LRU keyed by (model, old hash, new hash), so a
change is asked about once, and a second index by the new hash for the receipts of later calls.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mcpward.evidence.vocabulary import ConsultOutcome

CacheKey = tuple[str, str, str]  # (model, old contract hash, new contract hash)


@dataclass(frozen=True, slots=True)
class ConsultVerdict:
    """One consult's result as the gate records it (never the consulted text)."""

    outcome: ConsultOutcome
    model: str
    triggers: tuple[str, ...]
    reason: str | None = None  # the model's short reason, sanitised (hold/proceed only)
    at: float = 0.0  # time.time() of the answer

    @property
    def escalates(self) -> bool:
        return self.outcome is ConsultOutcome.HOLD

    def evidence(self) -> dict[str, Any]:
        """What a receipt carries: the outcome, the model and why it was asked (no reason text:
        it is derived from attacker-written descriptions)."""
        return {"outcome": self.outcome.value, "model": self.model, "triggers": list(self.triggers)}

    def to_json(self) -> dict[str, Any]:
        return {**self.evidence(), "reason": self.reason}


class VerdictCache:
    """Bounded: the least recently used verdict goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._by_change: OrderedDict[CacheKey, ConsultVerdict] = OrderedDict()
        self._by_new: OrderedDict[str, ConsultVerdict] = OrderedDict()

    def get(self, key: CacheKey) -> ConsultVerdict | None:
        verdict = self._by_change.get(key)
        if verdict is not None:
            self._by_change.move_to_end(key)
        return verdict

    def put(self, key: CacheKey, verdict: ConsultVerdict) -> None:
        self._by_change[key] = verdict
        self._by_change.move_to_end(key)
        self._by_new[key[2]] = verdict
        self._by_new.move_to_end(key[2])
        while len(self._by_change) > self.size:
            self._by_change.popitem(last=False)
        while len(self._by_new) > self.size:
            self._by_new.popitem(last=False)

    def latest_for(self, new_hash: str) -> ConsultVerdict | None:
        """The last verdict on a change that led to this contract hash."""
        return self._by_new.get(new_hash)

    def __len__(self) -> int:
        return len(self._by_change)
