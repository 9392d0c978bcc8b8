"""Postures: the default table is complete and the verdicts combine as documented."""

from __future__ import annotations

from pathlib import Path

from mcpward.contracts.model import Verdict
from mcpward.contracts.postures import GUARD_TABLE, Posture, PostureTable, base_verdict
from mcpward.contracts.taxonomy import ChangeKind as K
from mcpward.contracts.taxonomy import family

P, H, I = Verdict.PROCEED, Verdict.HOLD, Verdict.INCONCLUSIVE  # noqa: E741


def test_every_kind_has_a_family_and_a_reasoned_default() -> None:
    for kind in K:
        family(kind)
        _, why = GUARD_TABLE[kind]
        assert why.strip(), kind


def test_the_docs_table_names_every_kind() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "contracts.md").read_text(
        encoding="utf-8"
    )
    missing = [kind.value for kind in K if f"| `{kind.value}` |" not in docs]
    assert not missing, f"docs/contracts.md lacks: {missing}"


def test_guard_holds_what_the_issue_requires_and_passes_churn() -> None:
    must_hold = [
        K.ADDED_REQUIRED_PARAM, K.REMOVED_PARAM, K.TYPE_CHANGED, K.ENUM_VALUES_REMOVED,
        K.CONSTRAINT_NARROWED, K.REQUIRED_SET_EXPANDED, K.TOOL_REMOVED, K.DESCRIPTION_ONLY,
        K.INJECTION_MARKER_ADDED, K.ANNOTATION_FLIP_TO_DESTRUCTIVE, K.OUTPUT_SCHEMA_CHANGED,
        K.DEEP_SCHEMA_UNDIFFABLE, K.INSTRUCTIONS_CHANGED,
    ]  # fmt: skip
    must_pass = [
        K.ADDED_OPTIONAL_PARAM, K.OUTPUT_SCHEMA_ADDED, K.SCHEMA_DIALECT_CHANGED,
        K.ADDITIONAL_PROPERTIES_CLOSED, K.EXECUTION_CHANGED, K.ANNOTATION_HINT_CHANGED,
        K.TITLE_CHANGED, K.SCHEMA_ANNOTATION_CHANGED, K.META_CHANGED, K.TOOL_ADDED,
    ]  # fmt: skip
    table = PostureTable(Posture.GUARD)
    for kind in must_hold:
        assert table.verdict_of(kind).holds, kind
    for kind in must_pass:
        assert table.verdict_of(kind) is P, kind
    assert table.verdict_of(K.ANNOTATION_FLIP_TO_DESTRUCTIVE) is I


def test_strict_holds_everything_but_churn_and_keeps_inconclusive() -> None:
    assert base_verdict(K.ADDED_OPTIONAL_PARAM, Posture.STRICT) is H
    assert base_verdict(K.SCHEMA_DIALECT_CHANGED, Posture.STRICT) is P
    assert base_verdict(K.OUTPUT_SCHEMA_CHANGED, Posture.STRICT) is I
    assert PostureTable(Posture.STRICT).verdict_of(K.TOOL_ADDED) is H  # review by default


def test_decide_combines_hold_over_inconclusive_over_proceed() -> None:
    table = PostureTable(Posture.GUARD)
    assert table.decide([]).verdict is P
    assert table.decide([K.TITLE_CHANGED]).verdict is P
    assert table.decide([K.TITLE_CHANGED, K.OUTPUT_SCHEMA_CHANGED]).verdict is I
    decision = table.decide([K.OUTPUT_SCHEMA_CHANGED, K.ADDED_REQUIRED_PARAM, K.TITLE_CHANGED])
    assert decision.verdict is H
    assert decision.holding == ("output-schema-changed", "added-required-param")


def test_monitor_never_enforces_but_judges() -> None:
    decision = PostureTable(Posture.MONITOR).decide([K.ADDED_REQUIRED_PARAM])
    assert decision.verdict is P
    assert decision.judged is H


def test_overrides_and_new_item_policy() -> None:
    table = PostureTable(Posture.GUARD, {K.DESCRIPTION_ONLY: P, K.TITLE_CHANGED: H}, None)
    assert table.verdict_of(K.DESCRIPTION_ONLY) is P
    assert table.verdict_of(K.TITLE_CHANGED) is H
    assert PostureTable(Posture.GUARD, None, "review").verdict_of(K.TOOL_ADDED) is H
    assert PostureTable(Posture.STRICT, None, "tofu").verdict_of(K.PROMPT_ADDED) is P
