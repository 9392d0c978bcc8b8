"""Tier 3 as the gate sees it: which holds behaviour can settle, and whether a CLEARED verdict
recorded on a hold releases it in this gateway run (the validator itself lives in
`mcpward.validation`, loaded only by `mcpward validate` and the console).
"""

from __future__ import annotations

from typing import Any

from mcpward.contracts.model import HoldRecord, ItemKind
from mcpward.contracts.taxonomy import ChangeKind, Family, family

VALIDATION = "validation"  # the key of the last verdict in HoldRecord.extra
CLEARED = "CLEARED"
FAILED = "FAILED"


def _behavioural(kind: str) -> bool:
    try:
        return family(ChangeKind(kind)) is Family.BEHAVIOURAL
    except ValueError:
        return False


def validatable(hold: HoldRecord) -> bool:
    """A tool held for drift only in the behavioural family (annotations flipped to destructive
    or open world, output schema or a default changed): observation can settle it. A hold that
    also has a breaking, text or marker change is a person's to review."""
    if hold.kind is not ItemKind.TOOL or hold.reason != "drift" or hold.new_contract is None:
        return False
    holding = hold.extra.get("holding_kinds") or hold.change_kinds
    return bool(holding) and all(_behavioural(str(k)) for k in holding)


def verdict_of(hold: HoldRecord) -> dict[str, Any] | None:
    """The tier-3 verdict recorded on this hold for exactly its held contract, if any."""
    found = hold.extra.get(VALIDATION)
    if isinstance(found, dict) and found.get("held_hash") == hold.new_hash:
        return found
    return None


def released(hold: HoldRecord, run_started_at: float) -> bool:
    """A CLEARED verdict for this contract, reached while this gateway run was up: released for
    this run only (a gateway started later holds again; a person re-pins)."""
    verdict = verdict_of(hold)
    if verdict is None or verdict.get("verdict") != CLEARED:
        return False
    at = verdict.get("at")
    return isinstance(at, int | float) and at >= run_started_at
