"""Hold cards are ordered and coloured by risk, and show what changed inline (issue #25)."""

from __future__ import annotations

from mcpward.console.queries import contract_delta, hold_risk, plain_value
from mcpward.contracts.model import HoldRecord, ItemKind, Verdict


def hold(reason: str, *kinds: str) -> HoldRecord:
    return HoldRecord(
        upstream="up",
        kind=ItemKind.TOOL,
        name="t",
        old_hash="a",
        new_hash="b",
        change_kinds=list(kinds),
        changes=[],
        posture="guard",
        verdict=Verdict.HOLD,
        reason=reason,
        first_seen=0.0,
        last_seen=0.0,
    )


def test_a_poisoned_description_outranks_a_removal() -> None:
    assert hold_risk(hold("drift", "description-only", "injection-marker-added")) == "high"
    assert hold_risk(hold("consult", "description-only")) == "high"
    assert hold_risk(hold("drift", "added-required-param")) == "medium"
    assert hold_risk(hold("removed", "tool-removed")) == "low"


def test_the_delta_marks_only_what_changed_with_some_context() -> None:
    old = "\n".join(f"line {i}" for i in range(20))
    new = old.replace("line 10", "line 10 changed")
    delta = contract_delta(old, new)
    assert ("del", "line 10") in delta and ("add", "line 10 changed") in delta
    assert delta[0] == ("gap", "…") and ("same", "line 0") not in delta


def test_plain_values() -> None:
    assert plain_value(None) == "—" and plain_value(True) == "yes"
    assert plain_value([{"since_seq": 0, "level": "crash_safe"}]) == "since seq 0, level crash_safe"
