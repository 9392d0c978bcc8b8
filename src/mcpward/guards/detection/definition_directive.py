"""The rules a tool definition is read with, and the learned scorer's probability that a
definition carries orders aimed at the model (shared by tool_poisoning and tool_shadowing)."""

from __future__ import annotations

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


def directive_score(item: Any) -> directive_model.ModelScore:
    """The learned scorer on a definition read with the default rules (no custom patterns)."""
    findings = definition_scanner().scan_definition(item)
    model = directive_model.load_model("definition")
    return model.score_definition(item, findings)
