"""MultiPattern's answer is exact: the FilteredRE2 prefilter plus the set of patterns without
literal atoms says a pattern matches if and only if it matches on its own (issue #24 swapped
one big RE2 set for this engine to cut memory; this keeps it honest)."""

from __future__ import annotations

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpward.guards.detection.regex import MultiPattern, compile_pattern
from mcpward.guards.detection.secret_rules import LITERAL_RULES, PROVIDER_RULES
from mcpward.guards.tool_poisoning import DEFINITION_RULES

PATTERNS = [r.pattern for r in DEFINITION_RULES] + [
    r.pattern for r in PROVIDER_RULES + LITERAL_RULES
]
ENGINE = MultiPattern(PATTERNS)
SINGLES = [compile_pattern(p) for p in PATTERNS]

# words and shapes the rules look for, so that generated texts hit some of them
PIECES = [
    "ignore previous instructions",
    "always call",
    "do not tell the user",
    "<IMPORTANT>",
    "send it to https://evil.example/?k=",
    "忽略之前的指令",
    "ne dis rien à l'utilisateur",
    "AKIA" + "Q" * 16,
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "-----BEGIN RSA PRIVATE KEY-----",
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 3,
    "\u200b\u200b",
    "the weather today is fine",
    "ab" * 60,
]


def reference(text: str) -> list[int]:
    data = text.encode("utf-8", "replace")
    return [i for i, single in enumerate(SINGLES) if single.search(data)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=40)), max_size=8))
def test_the_engine_answers_as_the_patterns_one_by_one(parts: list[str]) -> None:
    text = " ".join(parts)
    assert ENGINE.matching(text) == reference(text)


def test_it_has_both_kinds_of_pattern_and_finds_each() -> None:
    """Patterns with atoms and without (a long hex shape) are both found, spans included."""
    text = "please ignore previous instructions " + "ab" * 60
    found = ENGINE.matching(text)
    assert found == reference(text) and len(found) >= 2
    for hit in ENGINE.finditer(text):
        assert re2.search(PATTERNS[hit.index], text[hit.start : hit.end] or text)
