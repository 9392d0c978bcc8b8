"""Where a verdict goes: a `validation` ledger entry first, then the hold. FAILED adds its
evidence to the hold; CLEARED is recorded on the hold (the gate releases it for its current run)
unless an earlier FAILED for the same contract stands; UNAVAILABLE leaves the hold as it is.
Nothing here writes a pin, a shared verdict or anything outside the gateway's own store.
"""

from __future__ import annotations

from mcpward.contracts.clearance import FAILED, VALIDATION, verdict_of
from mcpward.contracts.model import ItemKind
from mcpward.contracts.store import PinStore
from mcpward.evidence.source import LedgerSource
from mcpward.evidence.validations import record_validation
from mcpward.validation.verdict import Outcome, Report


def record(report: Report, store: PinStore, source: LedgerSource) -> tuple[bool, str]:
    """Record the verdict; returns whether the hold is released, and what happened to it."""
    ledger = source.open_ledger()
    try:
        record_validation(ledger, report.to_json(), report.at)
    finally:
        ledger.close()
    if report.outcome is Outcome.UNAVAILABLE:
        return False, "the hold stays (nothing could be concluded)"
    hold = next(
        (h for h in store.holds(report.upstream) if h.key == (ItemKind.TOOL, report.item)), None
    )
    if hold is None or hold.new_hash != report.held_hash:
        return False, "the hold moved meanwhile: recorded in the ledger only"
    earlier = verdict_of(hold)
    if report.outcome is Outcome.CLEARED and earlier and earlier.get("verdict") == FAILED:
        return False, "not released: an earlier FAILED verdict on this contract stands"
    hold.extra = {**hold.extra, VALIDATION: report.to_json()}
    store.write(report.upstream, put_holds=[hold])
    if report.outcome is Outcome.FAILED:
        return False, "the hold stays; the evidence is added to it"
    return True, (
        "released for the running gateway only (a restart holds again; re-pin stays a person's act)"
    )
