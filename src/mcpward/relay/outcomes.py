"""How a pipeline outcome is named in a receipt (allow, deny, hold, redact, dry-run stops...)."""

from __future__ import annotations

from mcpward.pipeline.decisions import Hold
from mcpward.pipeline.executor import Outcome


def decision_of(out: Outcome, error_code: int | None = None) -> str:
    """The receipt's `decision` for one outcome (and the JSON-RPC error code answered, if any)."""
    if out.stop is not None:
        return "hold" if isinstance(out.stop, Hold) else "deny"
    if out.shadow_stops:
        return (
            "would_hold_dry_run"
            if isinstance(out.shadow_stops[0][1], Hold)
            else "would_deny_dry_run"
        )
    if error_code is not None:
        return "error"
    if out.modified:
        return "redact" if any(run.evidence.get("redactions") for run in out.runs) else "modify"
    return "allow"
