"""The rules a tool definition is read with, and the learned scorer's probability that a
definition carries orders aimed at the model (shared by tool_poisoning and tool_shadowing)."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from mcpward.guards.detection import directive_model
from mcpward.guards.detection.concepts import MARKER_RULES
from mcpward.guards.detection.families import (
    ENCODED_RULES,
    INSTRUCTION_RULES,
    POISONING_ONLY_RULES,
)
from mcpward.guards.detection.multilingual import MULTILINGUAL_INSTRUCTION_RULES
from mcpward.guards.detection.scanner import NAME_RULES, ContentScanner

# The instruction rules carry preference manipulation (English and the eight languages).
# The concept markers (concepts.py) are scored together, by co-occurrence, not one by one.
DEFINITION_RULES = (
    INSTRUCTION_RULES
    + MULTILINGUAL_INSTRUCTION_RULES
    + POISONING_ONLY_RULES
    + ENCODED_RULES
    + MARKER_RULES
)


@cache
def definition_scanner() -> ContentScanner:
    """The default tool_poisoning scanner over definitions, built once per process."""
    return ContentScanner(DEFINITION_RULES, name_rules=NAME_RULES)


def content_digest(item: Any) -> bytes | None:
    """A 16-byte digest of a definition's JSON (keys sorted): the key under which its verdict is
    kept (memory bounded by the entries, whatever their size); None when it is not JSON."""
    try:
        text = json.dumps(item, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


SCORE_CACHE = 2048  # definitions whose directive score is kept (then it starts over)
_scores: dict[bytes, directive_model.ModelScore] = {}


def directive_score(item: Any) -> directive_model.ModelScore:
    """The learned scorer on a definition read with the default rules (no custom patterns),
    kept per content: tool_shadowing asks it on every list that mentions another upstream."""
    key = content_digest(item)
    scored = _scores.get(key) if key is not None else None
    if scored is None:
        findings = definition_scanner().scan_definition(item)
        if any(f.family == "unscannable" for f in findings):
            return directive_model.ModelScore(0.0, ())  # the rules fail closed on it already
        scored = directive_model.load_model("definition").score_definition(item, findings)
        if key is not None:
            if len(_scores) >= SCORE_CACHE:
                _scores.clear()
            _scores[key] = scored
    return scored
