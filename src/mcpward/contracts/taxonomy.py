"""The drift taxonomy: every way a pinned contract can differ from the live one.

Each kind belongs to one family; postures map kinds to verdicts (see `postures.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Family(StrEnum):
    BREAKING = "breaking"  # an existing caller's call may now fail or mean something else
    BEHAVIOURAL = "behavioural"  # the declared behaviour moved; only observing it could clear it
    TEXT = "text"  # agent-read text was rewritten (the most attacker-controllable channel)
    ADDITIVE = "additive"  # new optional surface; existing calls are unaffected
    COSMETIC = "cosmetic"  # display-only or SDK/tooling churn
    FAILSAFE = "failsafe"  # the diff could not be completed; never a silent pass
    MARKER = "marker"  # injection/exfil marker newly present
    INTEGRITY = "integrity"  # the pin itself cannot be trusted


class ChangeKind(StrEnum):
    # tools as a whole
    TOOL_ADDED = "tool-added"
    TOOL_REMOVED = "tool-removed"
    # input schema
    ADDED_REQUIRED_PARAM = "added-required-param"
    ADDED_OPTIONAL_PARAM = "added-optional-param"
    REMOVED_PARAM = "removed-param"
    TYPE_CHANGED = "type-changed"
    TYPE_WIDENED = "type-widened"
    ENUM_VALUES_REMOVED = "enum-values-removed"
    ENUM_VALUES_ADDED = "enum-values-added"
    CONSTRAINT_NARROWED = "constraint-narrowed"
    CONSTRAINT_RELAXED = "constraint-relaxed"
    REQUIRED_SET_EXPANDED = "required-set-expanded"
    REQUIRED_SET_REDUCED = "required-set-reduced"
    ADDITIONAL_PROPERTIES_CLOSED = "additional-properties-closed"
    DEFAULT_CHANGED = "default-changed"
    PARAM_DESCRIPTION_CHANGED = "param-description-changed"
    SCHEMA_DIALECT_CHANGED = "schema-dialect-changed"
    SCHEMA_ANNOTATION_CHANGED = "schema-annotation-changed"
    SCHEMA_KEYWORD_CHANGED = "schema-keyword-changed"
    SCHEMA_EQUIVALENT_FORM = "schema-equivalent-form"
    DEEP_SCHEMA_UNDIFFABLE = "deep-schema-undiffable"
    # output schema
    OUTPUT_SCHEMA_ADDED = "output-schema-added"
    OUTPUT_SCHEMA_REMOVED = "output-schema-removed"
    OUTPUT_SCHEMA_CHANGED = "output-schema-changed"
    OUTPUT_SCHEMA_CHURN = "output-schema-churn"
    # annotations and top-level fields
    ANNOTATION_FLIP_TO_DESTRUCTIVE = "annotation-flip-to-destructive"
    ANNOTATION_FLIP_TO_OPEN_WORLD = "annotation-flip-to-open-world"
    ANNOTATION_HINT_CHANGED = "annotation-hint-changed"
    DESCRIPTION_ONLY = "description-only"
    DESCRIPTION_REFORMATTED = "description-reformatted"
    TITLE_CHANGED = "title-changed"
    ICONS_CHANGED = "icons-changed"
    EXECUTION_CHANGED = "execution-changed"
    META_CHANGED = "meta-changed"
    UNKNOWN_FIELD_CHANGED = "unknown-field-changed"
    INJECTION_MARKER_ADDED = "injection-marker-added"
    # server
    INSTRUCTIONS_CHANGED = "instructions-changed"
    # prompts
    PROMPT_ADDED = "prompt-added"
    PROMPT_REMOVED = "prompt-removed"
    PROMPT_ARGUMENT_ADDED_REQUIRED = "prompt-argument-added-required"
    PROMPT_ARGUMENT_ADDED_OPTIONAL = "prompt-argument-added-optional"
    PROMPT_ARGUMENT_REMOVED = "prompt-argument-removed"
    PROMPT_ARGUMENT_BECAME_REQUIRED = "prompt-argument-became-required"
    PROMPT_ARGUMENT_BECAME_OPTIONAL = "prompt-argument-became-optional"
    PROMPT_DESCRIPTION_CHANGED = "prompt-description-changed"
    PROMPT_ARGUMENT_DESCRIPTION_CHANGED = "prompt-argument-description-changed"
    PROMPT_TITLE_CHANGED = "prompt-title-changed"
    # resources and resource templates
    RESOURCE_ADDED = "resource-added"
    RESOURCE_REMOVED = "resource-removed"
    RESOURCE_DESCRIPTION_CHANGED = "resource-description-changed"
    RESOURCE_NAME_CHANGED = "resource-name-changed"
    RESOURCE_TITLE_CHANGED = "resource-title-changed"
    RESOURCE_MIME_TYPE_CHANGED = "resource-mime-type-changed"
    RESOURCE_ANNOTATIONS_CHANGED = "resource-annotations-changed"
    # the pin store
    PIN_STORE_TAMPERED = "pin-store-tampered"


_FAMILY: dict[ChangeKind, Family] = {
    ChangeKind.TOOL_ADDED: Family.ADDITIVE,
    ChangeKind.TOOL_REMOVED: Family.BREAKING,
    ChangeKind.ADDED_REQUIRED_PARAM: Family.BREAKING,
    ChangeKind.ADDED_OPTIONAL_PARAM: Family.ADDITIVE,
    ChangeKind.REMOVED_PARAM: Family.BREAKING,
    ChangeKind.TYPE_CHANGED: Family.BREAKING,
    ChangeKind.TYPE_WIDENED: Family.ADDITIVE,
    ChangeKind.ENUM_VALUES_REMOVED: Family.BREAKING,
    ChangeKind.ENUM_VALUES_ADDED: Family.ADDITIVE,
    ChangeKind.CONSTRAINT_NARROWED: Family.BREAKING,
    ChangeKind.CONSTRAINT_RELAXED: Family.ADDITIVE,
    ChangeKind.REQUIRED_SET_EXPANDED: Family.BREAKING,
    ChangeKind.REQUIRED_SET_REDUCED: Family.ADDITIVE,
    ChangeKind.ADDITIONAL_PROPERTIES_CLOSED: Family.COSMETIC,
    ChangeKind.DEFAULT_CHANGED: Family.BEHAVIOURAL,
    ChangeKind.PARAM_DESCRIPTION_CHANGED: Family.TEXT,
    ChangeKind.SCHEMA_DIALECT_CHANGED: Family.COSMETIC,
    ChangeKind.SCHEMA_ANNOTATION_CHANGED: Family.COSMETIC,
    ChangeKind.SCHEMA_KEYWORD_CHANGED: Family.FAILSAFE,
    ChangeKind.SCHEMA_EQUIVALENT_FORM: Family.COSMETIC,
    ChangeKind.DEEP_SCHEMA_UNDIFFABLE: Family.FAILSAFE,
    ChangeKind.OUTPUT_SCHEMA_ADDED: Family.ADDITIVE,
    ChangeKind.OUTPUT_SCHEMA_REMOVED: Family.BREAKING,
    ChangeKind.OUTPUT_SCHEMA_CHANGED: Family.BEHAVIOURAL,
    ChangeKind.OUTPUT_SCHEMA_CHURN: Family.COSMETIC,
    ChangeKind.ANNOTATION_FLIP_TO_DESTRUCTIVE: Family.BEHAVIOURAL,
    ChangeKind.ANNOTATION_FLIP_TO_OPEN_WORLD: Family.BEHAVIOURAL,
    ChangeKind.ANNOTATION_HINT_CHANGED: Family.COSMETIC,
    ChangeKind.DESCRIPTION_ONLY: Family.TEXT,
    ChangeKind.DESCRIPTION_REFORMATTED: Family.COSMETIC,
    ChangeKind.TITLE_CHANGED: Family.COSMETIC,
    ChangeKind.ICONS_CHANGED: Family.COSMETIC,
    ChangeKind.EXECUTION_CHANGED: Family.COSMETIC,
    ChangeKind.META_CHANGED: Family.COSMETIC,
    ChangeKind.UNKNOWN_FIELD_CHANGED: Family.COSMETIC,
    ChangeKind.INJECTION_MARKER_ADDED: Family.MARKER,
    ChangeKind.INSTRUCTIONS_CHANGED: Family.TEXT,
    ChangeKind.PROMPT_ADDED: Family.ADDITIVE,
    ChangeKind.PROMPT_REMOVED: Family.BREAKING,
    ChangeKind.PROMPT_ARGUMENT_ADDED_REQUIRED: Family.BREAKING,
    ChangeKind.PROMPT_ARGUMENT_ADDED_OPTIONAL: Family.ADDITIVE,
    ChangeKind.PROMPT_ARGUMENT_REMOVED: Family.BREAKING,
    ChangeKind.PROMPT_ARGUMENT_BECAME_REQUIRED: Family.BREAKING,
    ChangeKind.PROMPT_ARGUMENT_BECAME_OPTIONAL: Family.ADDITIVE,
    ChangeKind.PROMPT_DESCRIPTION_CHANGED: Family.TEXT,
    ChangeKind.PROMPT_ARGUMENT_DESCRIPTION_CHANGED: Family.TEXT,
    ChangeKind.PROMPT_TITLE_CHANGED: Family.COSMETIC,
    ChangeKind.RESOURCE_ADDED: Family.ADDITIVE,
    ChangeKind.RESOURCE_REMOVED: Family.BREAKING,
    ChangeKind.RESOURCE_DESCRIPTION_CHANGED: Family.TEXT,
    ChangeKind.RESOURCE_NAME_CHANGED: Family.COSMETIC,
    ChangeKind.RESOURCE_TITLE_CHANGED: Family.COSMETIC,
    ChangeKind.RESOURCE_MIME_TYPE_CHANGED: Family.BEHAVIOURAL,
    ChangeKind.RESOURCE_ANNOTATIONS_CHANGED: Family.COSMETIC,
    ChangeKind.PIN_STORE_TAMPERED: Family.INTEGRITY,
}


def family(kind: ChangeKind) -> Family:
    return _FAMILY[kind]


def same_words(a: object, b: object) -> bool:
    """Two texts that differ only in whitespace (SDKs re-indent docstrings between releases)."""
    return isinstance(a, str) and isinstance(b, str) and a.split() == b.split()


@dataclass(frozen=True, slots=True)
class Change:
    """One classified difference. `path` locates it (e.g. `inputSchema.properties.owner`).

    `detail` is short and machine-oriented; any attacker text in it must be sanitised before a
    human sees it (the renderers do that).
    """

    kind: ChangeKind
    path: str = ""
    detail: str = ""
    before: Any = None
    after: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self, *, with_values: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.path:
            out["path"] = self.path
        if self.detail:
            out["detail"] = self.detail
        if with_values:
            if self.before is not None:
                out["before"] = self.before
            if self.after is not None:
                out["after"] = self.after
        return out
