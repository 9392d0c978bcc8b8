"""The console's state changes: accept (re-pin) or keep a hold, each recorded in the ledger as a
`review` entry with the operator's identity and reason before it takes effect; and Validate,
which runs `mcpward validate` (tier 3) in its own process and shows its verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpward.contracts.clearance import validatable
from mcpward.contracts.model import ItemKind
from mcpward.contracts.review import GONE, ReviewError, accept
from mcpward.contracts.store import PinStore
from mcpward.evidence.reviews import MAX_REASON, ReviewAction, ReviewEvent, record_reviews
from mcpward.evidence.source import LedgerSource

MIN_REASON = 3
VALIDATE_TIMEOUT_S = 600.0


class ActionRefused(ValueError):
    """A review action that was not carried out; the message says why."""


def check_reason(reason: str | None) -> str:
    text = (reason or "").strip()
    if not MIN_REASON <= len(text) <= MAX_REASON:
        raise ActionRefused(f"a reason of {MIN_REASON} to {MAX_REASON} characters is required")
    if not all(c.isprintable() for c in text):
        raise ActionRefused("the reason must be printable text on one line")
    return text


def review_hold(
    store: PinStore,
    source: LedgerSource,
    *,
    action: ReviewAction,
    upstream: str,
    item_kind: str,
    item: str,
    expected_hash: str,
    operator: str,
    reason: str | None,
) -> ReviewEvent:
    """Record the decision, then (for accept) re-pin exactly the contract the operator saw.

    `expected_hash` is the held hash shown on the page ("gone" for a removal): if the hold moved
    since, nothing is done.
    """
    text = check_reason(reason)
    try:
        kind = ItemKind(item_kind)
    except ValueError:
        raise ActionRefused(f"unknown item kind {item_kind!r}") from None
    hold = next((h for h in store.holds(upstream) if h.key == (kind, item)), None)
    if hold is None:
        raise ActionRefused("no such open hold (it may have been reviewed already)")
    if (hold.new_hash or GONE) != expected_hash:
        raise ActionRefused("the hold changed since the page was shown; reload and review again")
    if action is ReviewAction.ACCEPT and hold.reason == "tampered":
        raise ActionRefused(
            "the pin store fails verification; it cannot be accepted, only reset "
            f"(mcpward pins revoke {upstream} --all)"
        )
    event = ReviewEvent(
        action, upstream, kind.value, item, hold.old_hash, hold.new_hash, operator, text
    )
    ledger = source.open_ledger()
    try:
        record_reviews(ledger, [event])
    finally:
        ledger.close()
    if action is ReviewAction.ACCEPT:
        try:
            accept(store, upstream, name=item, kind=kind, hash_=expected_hash, by=operator)
        except ReviewError as exc:
            raise ActionRefused(str(exc)) from None
    return event


def validate_hold(
    store: PinStore,
    config: Path | None,
    *,
    upstream: str,
    item: str,
    expected_hash: str,
    operator: str,
) -> dict[str, Any]:
    """Run `mcpward validate` on the held tool the operator saw (a separate process: the
    sandbox, its limits and its failures never touch the console); returns its JSON report.
    The command records the verdict in the ledger and on the hold itself."""
    if config is None:
        raise ActionRefused("validation needs the gateway config (start the console with --config)")
    hold = next((h for h in store.holds(upstream) if h.key == (ItemKind.TOOL, item)), None)
    if hold is None or hold.new_hash != expected_hash:
        raise ActionRefused("the hold changed since the page was shown; reload and review again")
    if not validatable(hold):
        raise ActionRefused("this hold has changes only a person can settle: review it")
    argv = [sys.executable, "-m", "mcpward.cli.main", "validate", upstream, item]
    argv += ["--config", str(config), "--json", "--by", operator]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=VALIDATE_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        report = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        raise ActionRefused("the validation could not be run; the hold stays") from None
    if not isinstance(report, dict) or "verdict" not in report:
        raise ActionRefused("the validation gave no verdict; the hold stays")
    return report
