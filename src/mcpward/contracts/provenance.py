"""Where a verdict comes from: which server (its identity digest), how and when the contract it
was judged against was pinned, under which posture, and what a HOLD does and does not mean.
"""

from __future__ import annotations

import time
from typing import Any

from mcpward.contracts.model import Pin

# The over-claim guard: a HOLD says the contract changed, never that the tool is (un)safe.
HOLD_MEANING = (
    "A HOLD means this contract changed against its pin: a contract diff for a person to "
    "review, not a verdict that the tool is unsafe (nor does a pass mean it is safe)."
)

# What a tier-2 HOLD adds: a model's opinion raised a structurally benign PROCEED; it is advisory.
CONSULT_MEANING = (
    "A semantic consult (a model the operator configured) flagged this structurally benign "
    "change; it is an opinion for a person to review. The consult can only hold, never clear."
)


def _utc(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def pin_origin(pin: Pin | None) -> dict[str, Any] | None:
    """How and when a pin was made: tofu (first use), auto (benign drift), accept by NAME,
    import, screen."""
    if pin is None:
        return None
    return {"how": pin.source, "at": _utc(pin.pinned_at)}


def provenance(pin: Pin | None, identity: Any, posture: str) -> dict[str, Any]:
    """The provenance block of a verdict (-32010 data, receipts, `mcpward holds`)."""
    return {
        "server_identity": identity,
        "pin": pin_origin(pin),
        "posture": posture,
        "meaning": HOLD_MEANING,
    }
