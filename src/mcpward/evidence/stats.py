"""`mcpward stats`: a local card over the receipts of a period (default: the last 30 days).

Counts decisions by guard and upstream, redactions, and the gateway's added latency percentiles.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpward.evidence.store import StoredEntry
from mcpward.evidence.vocabulary import EntryKind, PolicyDecision

CALL_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
PERCENTILES = (50, 90, 99)


def percentile(sorted_values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None if empty)."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return sorted_values[int(rank) - 1]


@dataclass(slots=True)
class Stats:
    since: float
    until: float
    decisions: int = 0
    calls: int = 0
    by_decision: Counter[str] = field(default_factory=Counter)
    by_method: Counter[str] = field(default_factory=Counter)
    denials_by_guard: Counter[str] = field(default_factory=Counter)
    denials_by_upstream: Counter[str] = field(default_factory=Counter)
    holds_by_guard: Counter[str] = field(default_factory=Counter)
    holds_by_upstream: Counter[str] = field(default_factory=Counter)
    shadow_by_guard: Counter[str] = field(default_factory=Counter)
    errors_by_upstream: Counter[str] = field(default_factory=Counter)
    redactions_by_reason: Counter[str] = field(default_factory=Counter)
    redactions_by_pattern: Counter[str] = field(default_factory=Counter)
    gateway_ms: list[float] = field(default_factory=list)
    durability: list[tuple[int, str]] = field(default_factory=list)  # (since seq, level)
    upstream_ms: list[float] = field(default_factory=list)

    def latency(self) -> dict[str, dict[str, float | None]]:
        out: dict[str, dict[str, float | None]] = {}
        for name, samples in (("gateway_ms", self.gateway_ms), ("upstream_ms", self.upstream_ms)):
            ordered = sorted(samples)
            out[name] = {f"p{p}": percentile(ordered, p) for p in PERCENTILES}
            out[name]["max"] = ordered[-1] if ordered else None
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "decisions": self.decisions,
            "calls": self.calls,
            "by_decision": dict(self.by_decision),
            "by_method": dict(self.by_method),
            "denials_by_guard": dict(self.denials_by_guard),
            "denials_by_upstream": dict(self.denials_by_upstream),
            "holds_by_guard": dict(self.holds_by_guard),
            "holds_by_upstream": dict(self.holds_by_upstream),
            "would_stop_by_guard": dict(self.shadow_by_guard),
            "errors_by_upstream": dict(self.errors_by_upstream),
            "redactions_by_reason": dict(self.redactions_by_reason),
            "redactions_by_pattern": dict(self.redactions_by_pattern),
            "latency": self.latency(),
            "durability": [{"since_seq": seq, "level": level} for seq, level in self.durability],
        }


def add_receipt(stats: Stats, receipt: dict[str, Any]) -> None:
    decision = str(receipt.get("decision"))
    upstream = str(receipt.get("upstream") or "-")
    stopper = str(receipt.get("stopped_by") or "-")
    method = str(receipt.get("method"))
    stats.decisions += 1
    stats.by_decision[decision] += 1
    stats.by_method[method] += 1
    if method in CALL_METHODS:
        stats.calls += 1
    if decision == PolicyDecision.DENY.value:
        stats.denials_by_guard[stopper] += 1
        stats.denials_by_upstream[upstream] += 1
    elif decision == PolicyDecision.HOLD.value:
        stats.holds_by_guard[stopper] += 1
        stats.holds_by_upstream[upstream] += 1
    elif decision == PolicyDecision.ERROR.value:
        stats.errors_by_upstream[upstream] += 1
    for guard in receipt.get("guards") or ():
        if guard.get("shadow"):
            stats.shadow_by_guard[str(guard.get("id"))] += 1
    for reason in receipt.get("redactions") or ():
        stats.redactions_by_reason[str(reason)] += 1
    for pattern, count in (receipt.get("redaction_counts") or {}).items():
        stats.redactions_by_pattern[str(pattern)] += int(count)
    for name, samples in (("gateway_ms", stats.gateway_ms), ("upstream_ms", stats.upstream_ms)):
        value = receipt.get(name)
        if isinstance(value, (int, float)):
            samples.append(float(value))


def compute_stats(entries: Iterable[StoredEntry], since: float, until: float) -> Stats:
    """Stats over receipt entries recorded in [since, until]."""
    stats = Stats(since, until)
    for stored in entries:
        if not since <= stored.recorded_at <= until:
            continue
        entry = orjson.loads(stored.body)
        if entry.get("kind") == EntryKind.RECEIPT.value:
            add_receipt(stats, entry["receipt"])
    return stats
