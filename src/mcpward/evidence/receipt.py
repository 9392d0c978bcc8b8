"""Decision receipts: one self-contained record per decision, built from a `DecisionRecord`.

Arguments and results are hashed (canonical SHA-256), never kept; closed vocabularies are checked.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import time
import unicodedata
from collections.abc import Mapping
from enum import Enum
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from mcpward.evidence.record import DecisionRecord
from mcpward.evidence.vocabulary import (
    ConsultOutcome,
    GuardOutcome,
    PolicyDecision,
    RedactionReason,
    RequiredMode,
    SideEffect,
)
from mcpward.pipeline.executor import GuardRun
from mcpward.protocol.canonical import canonical_bytes, canonical_sha256, is_plain, normalise

RECEIPT_VERSION = 1
MAX_EVIDENCE_BYTES = 2048  # a guard's evidence is metadata; anything bigger is summarised by hash

RECEIPT_ID = re.compile(r"^[0-9a-f]{28}$")
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
CODE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # error reasons: codes, never free text
PATTERN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
CONTRACT_HASH = re.compile(r"^[A-Za-z0-9:_-]{1,128}$")

_SIDE_EFFECT_HINTS: tuple[tuple[str, SideEffect | None, SideEffect | None], ...] = (
    # annotation, effect when true, effect when false
    ("readOnlyHint", SideEffect.READ_ONLY, None),
    ("destructiveHint", SideEffect.DESTRUCTIVE, SideEffect.NON_DESTRUCTIVE),
    ("idempotentHint", SideEffect.IDEMPOTENT, None),
    ("openWorldHint", SideEffect.OPEN_WORLD, SideEffect.CLOSED_WORLD),
)


class ReceiptError(ValueError):
    """A receipt could not be built: a producer passed a value outside a closed vocabulary."""


class Receipt(NamedTuple):
    """A receipt as stored in the ledger: its JSON object, canonical bytes and their SHA-256."""

    data: dict[str, Any]
    canonical: bytes
    sha256: str

    @property
    def receipt_id(self) -> str:
        return str(self.data["receipt_id"])

    @property
    def decision(self) -> str:
        return str(self.data["decision"])


def new_receipt_id(now: float | None = None) -> str:
    """28 hex digits: 12 of milliseconds since the epoch (sortable), 16 random.

    Ids need to be unique, not secret: the (fork-safe) PRNG is enough and far cheaper than urandom.
    """
    millis = int((time.time() if now is None else now) * 1000)
    return f"{millis:012x}{random.getrandbits(64):016x}"


_second_cache: tuple[int, str] = (-1, "")


def rfc3339(timestamp: float) -> str:
    """UTC RFC 3339 with microseconds, e.g. 2026-11-22T10:00:00.123456Z.

    On the hot path: the date-time part is formatted once per second, not once per receipt.
    """
    global _second_cache
    fraction, whole = math.modf(timestamp)
    seconds, micros = int(whole), round(fraction * 1_000_000)
    if micros >= 1_000_000:
        seconds, micros = seconds + 1, micros - 1_000_000
    elif micros < 0:
        seconds, micros = seconds - 1, micros + 1_000_000
    cached_second, prefix = _second_cache
    if cached_second != seconds:
        t = time.gmtime(seconds)
        prefix = (
            f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        )
        _second_cache = (seconds, prefix)
    return f"{prefix}.{micros:06d}Z"


_VOCABULARIES: dict[type[Enum], frozenset[str]] = {
    vocab: frozenset(str(m.value) for m in vocab)
    for vocab in (PolicyDecision, GuardOutcome, RedactionReason, ConsultOutcome)
}


def _closed(vocabulary: type[Enum], value: str, field: str) -> str:
    if value in _VOCABULARIES[vocabulary]:
        return value
    allowed = ", ".join(str(m.value) for m in vocabulary)
    raise ReceiptError(f"{field}={value!r} is not in the closed vocabulary ({allowed})")


def _millis(value: float | None) -> float | int | None:
    """Milliseconds to the microsecond, already in canonical form (integral values as ints)."""
    if value is None:
        return None
    if not math.isfinite(value) or value < 0:
        raise ReceiptError(
            f"latency {value!r} is not a finite, non-negative number of milliseconds"
        )
    rounded = round(float(value), 3)
    return int(rounded) if rounded.is_integer() else rounded


def _text(value: str | None) -> str | None:
    """A string in canonical (NFC) form, so the receipt is canonical as built."""
    if value is None or value.isascii():
        return value
    return unicodedata.normalize("NFC", value)


def _ascii_keys(value: Any) -> bool:
    if isinstance(value, dict):
        return all(k.isascii() and _ascii_keys(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_ascii_keys(v) for v in value)
    return True


def _hash_of(value: Any, field: str) -> str | None:
    if value is None:
        return None
    try:
        return canonical_sha256(value)
    except (TypeError, ValueError) as exc:
        raise ReceiptError(f"{field} is not a JSON value and cannot be hashed: {exc}") from None


def declared_side_effects(tool: Mapping[str, Any] | None) -> list[str]:
    """The side effects a tool's annotations state explicitly (MCP defaults do not count)."""
    if not tool:
        return []
    annotations = tool.get("annotations")
    if not isinstance(annotations, Mapping):
        return []
    effects: list[str] = []
    for hint, when_true, when_false in _SIDE_EFFECT_HINTS:
        value = annotations.get(hint)
        chosen = when_true if value is True else when_false if value is False else None
        if chosen is not None:
            effects.append(chosen.value)
    return effects


def required_mode(tool: Mapping[str, Any] | None) -> str | None:
    """read / write / destructive by the annotations and MCP's defaults (destructive if unsaid)."""
    if tool is None:
        return None
    annotations = tool.get("annotations")
    hints: Mapping[str, Any] = annotations if isinstance(annotations, Mapping) else {}
    if hints.get("readOnlyHint") is True:
        return RequiredMode.READ.value
    if hints.get("destructiveHint") is False:
        return RequiredMode.WRITE.value
    return RequiredMode.DESTRUCTIVE.value


_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


@lru_cache(maxsize=256)
def _profile(hints: tuple[Any, ...]) -> tuple[list[str], str]:
    annotations = {name: value for name, value in zip(_HINTS, hints, strict=True)}
    tool = {"annotations": annotations}
    return declared_side_effects(tool), required_mode(tool) or RequiredMode.DESTRUCTIVE.value


def _tool_profile(tool: Mapping[str, Any] | None) -> tuple[list[str], str | None]:
    """Side effects and required mode of a tool, cached by its four hints (hot path)."""
    if tool is None:
        return [], None
    annotations = tool.get("annotations")
    if not isinstance(annotations, Mapping):
        annotations = {}
    hints = tuple(
        value if isinstance(value, bool) else None
        for value in (annotations.get(name) for name in _HINTS)
    )
    effects, mode = _profile(hints)
    return list(effects), mode


def _evidence(evidence: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """A guard's evidence in canonical form, bounded: oversize or non-JSON evidence is summarised.
    Also whether its keys are all ASCII (then orjson's key order is the canonical order).

    Oversize evidence keeps only its hash; evidence is metadata, never content.
    """
    if not evidence:
        return {}, True
    if type(evidence) is dict and is_plain(evidence):
        # ASCII text, 64-bit ints, no floats: already canonical but for key order, which the
        # receipt's sorted serialisation supplies (canonical_bytes would give the same bytes).
        try:
            size = len(orjson.dumps(evidence))
        except (TypeError, orjson.JSONEncodeError):
            return {"omitted": "not_json"}, True
        if size > MAX_EVIDENCE_BYTES:
            raw = orjson.dumps(evidence, option=orjson.OPT_SORT_KEYS)
            return {"omitted": "too_large", "sha256": hashlib.sha256(raw).hexdigest()}, True
        return evidence, True
    try:
        value: dict[str, Any] = normalise(dict(evidence))
        raw = canonical_bytes(value)
    except (TypeError, ValueError):
        return {"omitted": "not_json"}, True
    if len(raw) > MAX_EVIDENCE_BYTES:
        return {"omitted": "too_large", "sha256": hashlib.sha256(raw).hexdigest()}, True
    return value, _ascii_keys(value)


def _guard_entry(run: GuardRun) -> tuple[dict[str, Any], bool]:
    evidence, ascii_keys = _evidence(run.evidence)
    entry = {
        "id": _text(run.guard_id),
        "kind": _text(run.kind),
        "phase": _text(run.phase),
        "outcome": _closed(GuardOutcome, run.outcome, f"guard {run.guard_id} outcome"),
        "duration_ms": _millis(run.duration_ms),
        "code": _text(run.code),
        "shadow": bool(run.shadow),
        "failure_mode": _text(run.failure_mode_applied),
        "evidence": evidence,
    }
    return entry, ascii_keys


def _redactions(runs: list[GuardRun]) -> tuple[list[str], dict[str, int]]:
    """Reasons and per-pattern counts from guards' `evidence["redactions"]` ({reason: {id: n}})."""
    reasons: set[str] = set()
    counts: dict[str, int] = {}
    for run in runs:
        declared = run.evidence.get("redactions") if run.evidence else None
        if declared is None:
            continue
        if not isinstance(declared, Mapping):
            raise ReceiptError(
                f"guard {run.guard_id}: evidence.redactions must map "
                "reason -> {pattern id: count}"
            )
        for reason, patterns in declared.items():
            reasons.add(_closed(RedactionReason, reason, f"guard {run.guard_id}: redaction reason"))
            if not isinstance(patterns, Mapping):
                raise ReceiptError(
                    f"guard {run.guard_id}: redactions[{reason!r}] must be a mapping"
                )
            for pattern, count in patterns.items():
                if not isinstance(pattern, str) or not PATTERN_ID.match(pattern):
                    raise ReceiptError(
                        f"guard {run.guard_id}: bad redaction pattern id {pattern!r}"
                    )
                if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                    raise ReceiptError(
                        f"guard {run.guard_id}: redaction count for {pattern} is {count!r}"
                    )
                counts[pattern] = counts.get(pattern, 0) + count
    return sorted(reasons), dict(sorted(counts.items()))


def _check_consults(runs: list[GuardRun]) -> None:
    """A guard's `evidence["consult"]` (the drift gate's tier 2) names its outcome from the
    closed vocabulary."""
    for run in runs:
        consult = run.evidence.get("consult") if run.evidence else None
        if consult is None:
            continue
        outcome = consult.get("outcome") if isinstance(consult, Mapping) else None
        _closed(ConsultOutcome, str(outcome), f"guard {run.guard_id}: consult outcome")


def _optional_code(value: str | None, field: str, pattern: re.Pattern[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.match(value):
        raise ReceiptError(f"{field}={value!r} is not a valid code ({pattern.pattern})")
    return value


class PayloadHashes(NamedTuple):
    """A record's input and output hashes, taken where its payloads cannot change underneath."""

    input_hash: str | None
    output_hash: str | None


def payload_hashes(record: DecisionRecord) -> PayloadHashes:
    """Canonical SHA-256 of the arguments and of the result. Raises ReceiptError (not JSON)."""
    return PayloadHashes(_hash_of(record.arguments, "arguments"), _hash_of(record.result, "result"))


def check_record(record: DecisionRecord) -> None:
    """Every check of `build_receipt` that can refuse a record, without building the receipt:
    where the receipt is built after the caller moved on, a producer's bug still reaches it."""
    _closed(PolicyDecision, record.decision, "decision")
    if not record.method:
        raise ReceiptError("method is empty")
    if not math.isfinite(record.started_at):
        raise ReceiptError("started_at is not a finite timestamp")
    if record.error_code is not None and (
        not isinstance(record.error_code, int) or isinstance(record.error_code, bool)
    ):
        raise ReceiptError(f"error_code={record.error_code!r} is not an integer")
    for run in record.runs:
        _closed(GuardOutcome, run.outcome, f"guard {run.guard_id} outcome")
        _millis(run.duration_ms)
    _redactions(record.runs)
    _check_consults(record.runs)
    _optional_code(record.contract_hash, "contract_hash", CONTRACT_HASH)
    _optional_code(record.error_reason, "error_reason", CODE)
    _millis(record.gateway_ms)
    _millis(record.upstream_ms)


def build_receipt(
    record: DecisionRecord,
    *,
    receipt_id: str | None = None,
    hashes: PayloadHashes | None = None,
) -> Receipt:
    """Validate a decision and turn it into a receipt. Raises ReceiptError on a producer bug.

    `hashes`: the payload hashes if already taken (`payload_hashes`); else they are taken here.
    """
    decision = _closed(PolicyDecision, record.decision, "decision")
    if not record.method:
        raise ReceiptError("method is empty")
    if not math.isfinite(record.started_at):
        raise ReceiptError("started_at is not a finite timestamp")
    rid = receipt_id or new_receipt_id(record.started_at)
    if not RECEIPT_ID.match(rid):
        raise ReceiptError(f"receipt id {rid!r} does not match {RECEIPT_ID.pattern}")
    if record.error_code is not None and (
        not isinstance(record.error_code, int) or isinstance(record.error_code, bool)
    ):
        raise ReceiptError(f"error_code={record.error_code!r} is not an integer")
    if hashes is None:
        hashes = payload_hashes(record)
    identity = record.identity
    is_tool = record.method == "tools/call"
    redactions, redaction_counts = _redactions(record.runs)
    _check_consults(record.runs)
    effects, mode = _tool_profile(record.tool_definition) if is_tool else ([], None)
    guards: list[dict[str, Any]] = []
    ascii_keys = True
    for run in record.runs:
        entry, ascii_entry = _guard_entry(run)
        guards.append(entry)
        ascii_keys = ascii_keys and ascii_entry
    data: dict[str, Any] = {
        "version": RECEIPT_VERSION,
        "receipt_id": rid,
        "time": rfc3339(record.started_at),
        "upstream": _text(record.upstream),
        "method": _text(record.method),
        "name": _text(record.name),
        "session_id": _text(record.session_id),
        "era": _text(record.era),
        "client_id": _text(identity.client_id) if identity else None,
        "actor_id": _text(identity.sub) if identity else None,
        "declared_side_effects": effects,
        "required_mode": mode,
        "input_hash": hashes.input_hash,
        "contract_hash": _optional_code(record.contract_hash, "contract_hash", CONTRACT_HASH),
        "decision": decision,
        "stopped_by": _text(record.stopped_by),
        "guards": guards,
        "redactions": redactions,
        "redaction_counts": redaction_counts,
        "output_hash": hashes.output_hash,
        "error_code": record.error_code,
        "error_reason": _optional_code(record.error_reason, "error_reason", CODE),
        "gateway_ms": _millis(record.gateway_ms),
        "upstream_ms": _millis(record.upstream_ms),
    }
    # Every value above is canonical as built (NFC strings, integral floats as ints, canonical
    # evidence), so sorting keys is all that is left - unless a guard used non-ASCII evidence keys,
    # whose canonical order (UTF-16) can differ from orjson's.
    raw = orjson.dumps(data, option=orjson.OPT_SORT_KEYS) if ascii_keys else canonical_bytes(data)
    return Receipt(data=data, canonical=raw, sha256=hashlib.sha256(raw).hexdigest())
