"""The console's state changes: accept (re-pin) or keep a hold, each recorded in the ledger as a
`review` entry with the operator's identity and reason before it takes effect.
"""

from __future__ import annotations

from mcpward.contracts.model import ItemKind
from mcpward.contracts.review import GONE, ReviewError, accept
from mcpward.contracts.store import PinStore
from mcpward.evidence.reviews import MAX_REASON, ReviewAction, ReviewEvent, record_reviews
from mcpward.evidence.source import LedgerSource

MIN_REASON = 3


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
