"""What the console pages show, read from the pin store and the ledger (hashes, never bodies).

Every read is bounded: at most MAX_SCAN recent ledger entries, page sizes capped at MAX_PAGE_SIZE.
"""

from __future__ import annotations

import difflib
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from mcpward.contracts.clearance import validatable, verdict_of
from mcpward.contracts.holds import Commands, hold_code, hold_message
from mcpward.contracts.model import HoldRecord, Pin
from mcpward.contracts.review import ReviewError, diff_holds
from mcpward.contracts.sanitize import sanitize_text
from mcpward.contracts.store import PinStore
from mcpward.contracts.taxonomy import ChangeKind, Family, family
from mcpward.evidence.ledger_keys import local_verifier_key
from mcpward.evidence.reviews import read_reviews
from mcpward.evidence.source import LedgerSource
from mcpward.evidence.store import LedgerView, StoredEntry
from mcpward.evidence.vocabulary import EntryKind, LedgerState, PolicyDecision
from mcpward.store.keys import KeyFileError
from mcpward.store.ledger_sqlite import LedgerStoreError

MAX_SCAN = 20_000
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 25
MAX_PAGE = 10_000
MAX_FILTER_LENGTH = 128
MAX_HELD_CALLS_SHOWN = 20
MAX_OBSERVATIONS_SHOWN = 30
MAX_CONTRACT_CHARS = 20_000
CHART_DAYS = 14
DECISIONS = tuple(d.value for d in PolicyDecision)


class QueryError(ValueError):
    """A filter or page request outside what the console accepts; the message says which."""


@contextmanager
def _ledger(source: LedgerSource) -> Iterator[LedgerView | None]:
    if not source.exists():
        yield None
        return
    with source.snapshot() as view:
        yield view


def _recent(view: LedgerView | None) -> list[StoredEntry]:
    if view is None:
        return []
    size = view.size()
    return list(view.entries(start_seq=max(0, size - MAX_SCAN)))


def _receipts(entries: list[StoredEntry]) -> Iterator[tuple[StoredEntry, dict[str, Any]]]:
    for stored in entries:
        entry = orjson.loads(stored.body)
        if entry.get("kind") == EntryKind.RECEIPT.value and isinstance(entry.get("receipt"), dict):
            yield stored, entry["receipt"]


def _contract_text(value: Any) -> str:
    if value is None:
        return ""
    text = json.dumps(value, indent=2, ensure_ascii=True, sort_keys=True)
    if len(text) > MAX_CONTRACT_CHARS:
        return text[:MAX_CONTRACT_CHARS] + "\n... (truncated)"
    return text


def _stamp(value: float) -> str:
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# -- holds -------------------------------------------------------------------------------------


@dataclass(slots=True)
class HoldView:
    upstream: str
    item_kind: str
    item: str
    code: str
    reason_line: str
    posture: str
    verdict: str
    enforced: bool
    old_hash: str | None
    new_hash: str | None
    first_seen: str
    changes: list[dict[str, str]]
    old_contract: str
    new_contract: str
    problem: str | None = None
    held_calls: list[dict[str, Any]] = field(default_factory=list)
    held_call_count: int = 0
    validatable: bool = False  # tier 3 (`mcpward validate`) can settle this hold
    validation: dict[str, Any] | None = None  # its last verdict on this held contract
    risk: str = "medium"  # high | medium | low: the card's order and colour
    delta: list[tuple[str, str]] = field(default_factory=list)  # ("add"|"del"|"same", line)
    kept: dict[str, Any] | None = None  # the latest "Keep held" decision on this very contract


# Change families by how much a person should worry (the card order and colour of a hold)
HIGH_RISK = frozenset({Family.MARKER, Family.INTEGRITY})
LOW_RISK = frozenset({Family.COSMETIC, Family.ADDITIVE})
RISK_ORDER = {"high": 0, "medium": 1, "low": 2}


def hold_risk(hold: HoldRecord) -> str:
    """high: injected instructions, an untrusted store, or a consult's flag; low: removals and
    cosmetic or additive changes only; medium: everything else (schema, behaviour, text)."""
    families = set()
    for value in hold.change_kinds:
        try:
            families.add(family(ChangeKind(value)))
        except (ValueError, KeyError):
            families.add(Family.FAILSAFE)
    if hold.reason in ("tampered", "consult") or families & HIGH_RISK:
        return "high"
    if hold.reason == "removed" or (families and families <= LOW_RISK):
        return "low"
    return "medium"


def _hold_view(hold: HoldRecord, changes: list[dict[str, str]], pin: Pin | None) -> HoldView:
    return HoldView(
        upstream=hold.upstream,
        item_kind=hold.kind.value,
        item=hold.name,
        code=hold_code(hold),
        reason_line=hold_message(hold, Commands()),
        posture=hold.posture,
        verdict=hold.verdict.value,
        enforced=hold.enforced,
        old_hash=hold.old_hash,
        new_hash=hold.new_hash,
        first_seen=_stamp(hold.first_seen),
        changes=changes,
        old_contract=_contract_text(pin.contract if pin else None),
        new_contract=_contract_text(hold.new_contract),
        validatable=validatable(hold),
        validation=_validation_view(verdict_of(hold)),
        risk=hold_risk(hold),
        delta=contract_delta(
            _contract_text(pin.contract if pin else None), _contract_text(hold.new_contract)
        ),
    )


def _validation_view(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """A tier-3 verdict for the page: contradictions first (attacker text sanitised)."""
    if verdict is None:
        return None
    observations = [o for o in verdict.get("observations", []) if isinstance(o, dict)]
    observations.sort(key=lambda o: not o.get("contradiction"))
    found = verdict.get("provenance")
    origin: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "verdict": str(verdict.get("verdict")),
        "at": _stamp(at) if isinstance(at := verdict.get("at"), int | float) else "—",
        "seed": origin.get("seed"),
        "battery_size": origin.get("battery_size"),
        "observations": [
            {
                "finding": str(o.get("finding")),
                "contradiction": bool(o.get("contradiction")),
                "case": sanitize_text(str(o.get("case", "")), 120),
                "detail": sanitize_text(str(o.get("detail", "")), 300),
            }
            for o in observations[:MAX_OBSERVATIONS_SHOWN]
        ],
        "cannot_see": [sanitize_text(str(c), 300) for c in origin.get("cannot_see", [])],
    }


def plain_value(value: Any) -> str:
    """A value as a person reads it: no None, True or Python brackets."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{str(k).replace('_', ' ')} {plain_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "; ".join(plain_value(v) for v in value) or "—"
    return str(value)


MAX_DELTA_LINES = 400
DELTA_CONTEXT = 3  # unchanged lines shown around each change


def contract_delta(old: str, new: str) -> list[tuple[str, str]]:
    """The pinned and held contract texts line by line, what changed marked (add / del)."""
    marks = {"+ ": "add", "- ": "del", "  ": "same"}
    lines = [
        (marks[line[:2]], line[2:])
        for line in difflib.ndiff(old.splitlines(), new.splitlines())
        if line[:2] in marks
    ]
    changed = [i for i, (kind, _) in enumerate(lines) if kind != "same"]
    near = {j for i in changed for j in range(i - DELTA_CONTEXT, i + DELTA_CONTEXT + 1)}
    shown: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        if i in near:
            shown.append(line)
        elif not shown or shown[-1][0] != "gap":
            shown.append(("gap", "…"))
    return shown[:MAX_DELTA_LINES]


def open_holds(store: PinStore, source: LedgerSource) -> list[HoldView]:
    """Every open hold with its diff against the pin and the calls it held."""
    views: list[HoldView] = []
    for upstream in store.upstreams():
        try:
            diffs = diff_holds(store, upstream)
        except ReviewError as exc:  # a tampered store: show the holds, not a diff
            for hold in store.holds(upstream):
                view = _hold_view(hold, [], None)
                view.problem = str(exc)
                views.append(view)
            continue
        for d in diffs:
            changes = [
                {
                    "kind": c.kind.value,
                    "path": sanitize_text(c.path, 120),
                    "detail": sanitize_text(c.detail, 200),
                }
                for c in d.changes
            ]
            views.append(_hold_view(d.hold, changes, d.pin))
    with _ledger(source) as ledger_view:
        entries = _recent(ledger_view)
    kept: dict[tuple[str, str, str, str | None], dict[str, Any]] = {}
    for review in read_reviews(entries):
        if review.get("action") == "keep_held":
            key = (
                str(review.get("upstream")),
                str(review.get("item_kind")),
                str(review.get("item")),
                review.get("new_hash"),
            )
            kept[key] = review
    for hold_view in views:
        key = (hold_view.upstream, hold_view.item_kind, hold_view.item, hold_view.new_hash)
        hold_view.kept = kept.get(key)
    views.sort(key=lambda v: RISK_ORDER[v.risk])
    by_item: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for _, receipt in _receipts(entries):
        if receipt.get("decision") == PolicyDecision.HOLD.value:
            by_item[(str(receipt.get("upstream")), str(receipt.get("name")))].append(receipt)
    for hold_view in views:
        calls = by_item.get((hold_view.upstream, hold_view.item), [])
        hold_view.held_call_count = len(calls)
        hold_view.held_calls = [_receipt_row(r) for r in calls[-MAX_HELD_CALLS_SHOWN:][::-1]]
    return views


def find_hold(store: PinStore, upstream: str, item_kind: str, item: str) -> HoldRecord | None:
    for hold in store.holds(upstream):
        if hold.kind.value == item_kind and hold.name == item:
            return hold
    return None


# -- pins --------------------------------------------------------------------------------------


def pins_by_upstream(store: PinStore, source: LedgerSource) -> list[dict[str, Any]]:
    """Per upstream: each pinned item with its hash, source and the reviews that touched it."""
    with _ledger(source) as view:
        reviews = read_reviews(_recent(view))
    history: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for review in reviews:
        key = (str(review.get("upstream")), str(review.get("item_kind")), str(review.get("item")))
        history[key].append(review)
    result = []
    for upstream in store.upstreams():
        loaded = store.load(upstream)
        pins = [
            {
                "kind": pin.kind.value,
                "name": pin.name,
                "hash": pin.hash,
                "source": sanitize_text(pin.source, 100),
                "pinned_at": _stamp(pin.pinned_at),
                "history": history.get((upstream, pin.kind.value, pin.name), [])[::-1],
            }
            for pin in sorted(loaded.pins.values(), key=lambda p: (p.kind.value, p.name))
        ]
        result.append(
            {
                "upstream": upstream,
                "tampered": loaded.tampered,
                "pins": pins,
                "holds": len(loaded.holds),
            }
        )
    return result


# -- receipts ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiptFilter:
    upstream: str | None = None
    tool: str | None = None
    decision: str | None = None
    guard: str | None = None
    since: float | None = None
    until: float | None = None
    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE

    def matches(self, stored: StoredEntry, receipt: dict[str, Any]) -> bool:
        if self.upstream and receipt.get("upstream") != self.upstream:
            return False
        if self.tool and receipt.get("name") != self.tool:
            return False
        if self.decision and receipt.get("decision") != self.decision:
            return False
        if self.guard and receipt.get("stopped_by") != self.guard:
            ids = {g.get("id") for g in receipt.get("guards") or () if isinstance(g, dict)}
            if self.guard not in ids:
                return False
        if self.since is not None and stored.recorded_at < self.since:
            return False
        return not (self.until is not None and stored.recorded_at > self.until)


def _text_filter(value: str | None, name: str) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > MAX_FILTER_LENGTH or not value.isprintable():
        raise QueryError(f"{name}: at most {MAX_FILTER_LENGTH} printable characters")
    return value.strip()


def _time_filter(value: str | None, name: str) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise QueryError(f"{name}: expected a date and time like 2026-01-31T13:45") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _int_filter(value: str | None, name: str, default: int, low: int, high: int) -> int:
    if value is None or value == "":
        return default
    if not value.isdigit() or not low <= int(value) <= high:
        raise QueryError(f"{name}: a whole number from {low} to {high}")
    return int(value)


def parse_receipt_filter(params: dict[str, str]) -> ReceiptFilter:
    """Validate query parameters into a filter; QueryError names the bad one."""
    decision = _text_filter(params.get("decision"), "decision")
    if decision is not None and decision not in DECISIONS:
        raise QueryError(f"decision: one of {', '.join(DECISIONS)}")
    return ReceiptFilter(
        upstream=_text_filter(params.get("upstream"), "upstream"),
        tool=_text_filter(params.get("tool"), "tool"),
        decision=decision,
        guard=_text_filter(params.get("guard"), "guard"),
        since=_time_filter(params.get("since"), "since"),
        until=_time_filter(params.get("until"), "until"),
        page=_int_filter(params.get("page"), "page", 1, 1, MAX_PAGE),
        page_size=_int_filter(
            params.get("page_size"), "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE
        ),
    )


def _receipt_row(receipt: dict[str, Any]) -> dict[str, Any]:
    """Only identifiers, decisions and hashes: nothing of a message body."""
    return {
        "receipt_id": receipt.get("receipt_id"),
        "time": receipt.get("time"),
        "upstream": receipt.get("upstream"),
        "method": receipt.get("method"),
        "name": receipt.get("name"),
        "client_id": receipt.get("client_id"),
        "decision": receipt.get("decision"),
        "stopped_by": receipt.get("stopped_by"),
        "error_code": receipt.get("error_code"),
        "input_hash": receipt.get("input_hash"),
        "output_hash": receipt.get("output_hash"),
        "contract_hash": receipt.get("contract_hash"),
        "guards": [f"{g.get('id')}:{g.get('outcome')}" for g in receipt.get("guards") or () if g],
        "gateway_ms": receipt.get("gateway_ms"),
    }


@dataclass(slots=True)
class ReceiptPage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    scanned: int


def receipts_page(source: LedgerSource, query: ReceiptFilter) -> ReceiptPage:
    """The newest-first page of receipts matching the filter (within the last MAX_SCAN)."""
    with _ledger(source) as view:
        entries = _recent(view)
    matched = [r for stored, r in _receipts(entries) if query.matches(stored, r)]
    matched.reverse()
    pages = max(1, -(-len(matched) // query.page_size))
    start = (query.page - 1) * query.page_size
    rows = [_receipt_row(r) for r in matched[start : start + query.page_size]]
    return ReceiptPage(rows, len(matched), query.page, pages, len(entries))


# -- ledger ------------------------------------------------------------------------------------


def ledger_state(source: LedgerSource) -> dict[str, Any]:
    """Verification result, size and the latest signed checkpoint (public data only)."""
    if not source.exists():
        return {"exists": False, "path": source.where}
    try:
        report = source.verify()
    except (LedgerStoreError, KeyFileError) as exc:
        return {"exists": True, "path": source.where, "error": str(exc)}
    with _ledger(source) as view:
        checkpoints = view.checkpoints() if view else []
    latest = checkpoints[-1] if checkpoints else None
    return {
        "exists": True,
        "path": source.where,
        "ok": report.ok,
        # tampered or truncated; `unsigned` is normal while the first checkpoint is pending
        "broken": report.state in (LedgerState.TAMPERED, LedgerState.TRUNCATED),
        "report": report.to_dict(),
        "checkpoint": latest.note if latest else None,
        "checkpoint_at": _stamp(latest.created_at) if latest else None,
        "has_public_key": public_key_text(source) is not None,
    }


def public_key_text(source: LedgerSource) -> str | None:
    """The checkpoint verifier key (`signing.pub` or derived from `keys.signing`), or None."""
    try:
        key = local_verifier_key(source.paths)
    except (OSError, KeyFileError):
        return None
    return None if key is None else key + "\n"


# -- guards ------------------------------------------------------------------------------------


def guard_activity(
    source: LedgerSource, days: int = CHART_DAYS, now: float | None = None
) -> dict[str, Any]:
    """Denials, holds and redactions per guard per UTC day over the last `days` days."""
    end = time.time() if now is None else now
    today = datetime.fromtimestamp(end, UTC).date()
    labels = [
        datetime.fromordinal(today.toordinal() - offset).strftime("%Y-%m-%d")
        for offset in range(days - 1, -1, -1)
    ]
    since = datetime.fromisoformat(labels[0]).replace(tzinfo=UTC).timestamp()
    counts: dict[str, dict[str, Counter[str]]] = defaultdict(
        lambda: {"deny": Counter(), "hold": Counter(), "redact": Counter()}
    )
    with _ledger(source) as view:
        entries = _recent(view)
    for stored, receipt in _receipts(entries):
        if stored.recorded_at < since:
            continue
        day = datetime.fromtimestamp(stored.recorded_at, UTC).strftime("%Y-%m-%d")
        decision = receipt.get("decision")
        stopper = receipt.get("stopped_by")
        if stopper and decision in (PolicyDecision.DENY.value, PolicyDecision.HOLD.value):
            counts[str(stopper)][str(decision)][day] += 1
        for guard in receipt.get("guards") or ():
            evidence = guard.get("evidence") if isinstance(guard, dict) else None
            if isinstance(evidence, dict) and evidence.get("redactions"):
                counts[str(guard.get("id"))]["redact"][day] += 1
    series = [
        {
            "guard": guard,
            "deny": [per["deny"][d] for d in labels],
            "hold": [per["hold"][d] for d in labels],
            "redact": [per["redact"][d] for d in labels],
        }
        for guard, per in sorted(counts.items())
    ]
    return {"days": labels, "series": series}
