"""Postures (monitor, guard, strict) and the default table from change kind to verdict.

The reasoning behind every default is written next to it and in docs/contracts.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from mcpward.contracts.model import Verdict
from mcpward.contracts.taxonomy import ChangeKind

K = ChangeKind
P, H, I = Verdict.PROCEED, Verdict.HOLD, Verdict.INCONCLUSIVE  # noqa: E741


class Posture(StrEnum):
    MONITOR = "monitor"  # never blocks; drift is recorded and the old pin is kept
    GUARD = "guard"  # the default
    STRICT = "strict"  # every change that is not pure tooling churn holds


# kind -> (guard verdict, why). Strict and monitor are derived from it below.
GUARD_TABLE: dict[ChangeKind, tuple[Verdict, str]] = {
    K.TOOL_ADDED: (P, "new surface; existing calls unaffected (new_tools: review holds it)"),
    K.TOOL_REMOVED: (H, "callers relying on the tool break; a vanished tool may reappear changed"),
    K.ADDED_REQUIRED_PARAM: (H, "every existing call now fails or must supply data it never sent"),
    K.ADDED_OPTIONAL_PARAM: (P, "additive; existing calls stay valid (its text is marker-scanned)"),
    K.REMOVED_PARAM: (H, "a parameter callers relied on is gone or silently ignored"),
    K.TYPE_CHANGED: (H, "the same argument now means something else or is rejected"),
    K.TYPE_WIDENED: (P, "accepts everything it accepted before (SDKs add null to optionals)"),
    K.ENUM_VALUES_REMOVED: (H, "values callers used are no longer accepted"),
    K.ENUM_VALUES_ADDED: (P, "additive"),
    K.CONSTRAINT_NARROWED: (H, "arguments that were valid are now rejected"),
    K.CONSTRAINT_RELAXED: (P, "everything valid before stays valid"),
    K.REQUIRED_SET_EXPANDED: (H, "an optional parameter became mandatory"),
    K.REQUIRED_SET_REDUCED: (P, "a mandatory parameter became optional"),
    K.ADDITIONAL_PROPERTIES_CLOSED: (P, "SDK churn: generators add additionalProperties:false"),
    K.DEFAULT_CHANGED: (H, "calls that omit the argument now behave differently"),
    K.PARAM_DESCRIPTION_CHANGED: (H, "schema text is read by the model like the description"),
    K.SCHEMA_DIALECT_CHANGED: (P, "tooling churn: a $schema dialect switch"),
    K.SCHEMA_ANNOTATION_CHANGED: (P, "titles, examples, comments: tooling churn"),
    K.SCHEMA_EQUIVALENT_FORM: (P, "same constraints written differently (bounds, order)"),
    K.SCHEMA_KEYWORD_CHANGED: (I, "a validation keyword whose direction is not modelled"),
    K.DEEP_SCHEMA_UNDIFFABLE: (I, "the diff could not be completed; never a silent pass"),
    K.OUTPUT_SCHEMA_ADDED: (P, "first published output schema; additive (marker-scanned)"),
    K.OUTPUT_SCHEMA_REMOVED: (H, "consumers parsing structured results break"),
    K.OUTPUT_SCHEMA_CHANGED: (I, "what the tool returns changed; only observing it could clear"),
    K.OUTPUT_SCHEMA_CHURN: (P, "output schema tooling churn (dialect, titles, closed objects)"),
    K.ANNOTATION_FLIP_TO_DESTRUCTIVE: (I, "the tool now says it may destroy or write"),
    K.ANNOTATION_FLIP_TO_OPEN_WORLD: (I, "the tool now says it reaches external systems"),
    K.ANNOTATION_HINT_CHANGED: (P, "hints published or moved toward safety; untrusted anyway"),
    K.DESCRIPTION_ONLY: (
        H,
        "the description is instructions the model follows; top poison channel",
    ),
    K.DESCRIPTION_REFORMATTED: (P, "same words, other whitespace: docstring re-indentation"),
    K.TITLE_CHANGED: (P, "display only"),
    K.ICONS_CHANGED: (P, "display only"),
    K.EXECUTION_CHANGED: (P, "task-support metadata; tooling churn"),
    K.META_CHANGED: (P, "_meta is protocol/vendor metadata, not read as instructions"),
    K.UNKNOWN_FIELD_CHANGED: (P, "new spec fields arrive with SDK upgrades (text marker-scanned)"),
    K.INJECTION_MARKER_ADDED: (H, "an injection/exfiltration marker newly appeared"),
    K.INSTRUCTIONS_CHANGED: (H, "server instructions are a description for the whole server"),
    K.PROMPT_ADDED: (P, "new surface"),
    K.PROMPT_REMOVED: (H, "callers relying on the prompt break"),
    K.PROMPT_ARGUMENT_ADDED_REQUIRED: (H, "existing prompt requests now fail"),
    K.PROMPT_ARGUMENT_ADDED_OPTIONAL: (P, "additive"),
    K.PROMPT_ARGUMENT_REMOVED: (H, "an argument callers relied on is gone"),
    K.PROMPT_ARGUMENT_BECAME_REQUIRED: (H, "an optional argument became mandatory"),
    K.PROMPT_ARGUMENT_BECAME_OPTIONAL: (P, "relaxation"),
    K.PROMPT_DESCRIPTION_CHANGED: (H, "agent-read text rewritten"),
    K.PROMPT_ARGUMENT_DESCRIPTION_CHANGED: (H, "agent-read text rewritten"),
    K.PROMPT_TITLE_CHANGED: (P, "display only"),
    K.RESOURCE_ADDED: (P, "new surface"),
    K.RESOURCE_REMOVED: (H, "callers relying on the resource break"),
    K.RESOURCE_DESCRIPTION_CHANGED: (H, "agent-read text rewritten"),
    K.RESOURCE_NAME_CHANGED: (P, "display name; the URI is the identity"),
    K.RESOURCE_TITLE_CHANGED: (P, "display only"),
    K.RESOURCE_MIME_TYPE_CHANGED: (P, "content type moved; held under strict"),
    K.RESOURCE_ANNOTATIONS_CHANGED: (P, "audience/priority/size hints churn"),
    K.PIN_STORE_TAMPERED: (H, "the baseline itself cannot be trusted"),
}

# churn that even strict lets through
_STRICT_PASSES = frozenset(
    {
        K.SCHEMA_DIALECT_CHANGED,
        K.SCHEMA_ANNOTATION_CHANGED,
        K.SCHEMA_EQUIVALENT_FORM,
        K.META_CHANGED,
        K.ICONS_CHANGED,
        K.TITLE_CHANGED,
        K.DESCRIPTION_REFORMATTED,
        K.PROMPT_TITLE_CHANGED,
        K.RESOURCE_TITLE_CHANGED,
        K.EXECUTION_CHANGED,
        K.OUTPUT_SCHEMA_CHURN,
        K.ANNOTATION_HINT_CHANGED,
        K.RESOURCE_ANNOTATIONS_CHANGED,
        K.ADDITIONAL_PROPERTIES_CLOSED,
        K.TYPE_WIDENED,
        K.CONSTRAINT_RELAXED,
        K.ENUM_VALUES_ADDED,
        K.REQUIRED_SET_REDUCED,
        K.PROMPT_ARGUMENT_BECAME_OPTIONAL,
    }
)
_NEW_ITEM_KINDS = frozenset({K.TOOL_ADDED, K.PROMPT_ADDED, K.RESOURCE_ADDED})


def base_verdict(kind: ChangeKind, posture: Posture) -> Verdict:
    """The built-in verdict of one kind under a posture (before config overrides)."""
    guard = GUARD_TABLE[kind][0]
    if posture is Posture.STRICT:
        if guard is Verdict.INCONCLUSIVE or kind in _STRICT_PASSES:
            return guard
        return Verdict.HOLD
    return guard  # monitor enforces nothing, but judges like guard to decide what is recorded


@dataclass(frozen=True, slots=True)
class PostureDecision:
    """The verdict on a set of changes under one posture.

    `verdict` is what is enforced (always PROCEED under monitor); `judged` is what the posture's
    table says, which under monitor is recorded as an observed-but-not-enforced hold.
    """

    verdict: Verdict
    judged: Verdict
    holding: tuple[str, ...]  # the kinds that made it hold


@dataclass(frozen=True, slots=True)
class PostureTable:
    """A posture plus per-kind overrides and the new-item policy, as configured for an upstream."""

    posture: Posture = Posture.GUARD
    overrides: Mapping[ChangeKind, Verdict] | None = None
    new_items: str | None = None  # "tofu" | "review" | None (posture default)

    def verdict_of(self, kind: ChangeKind) -> Verdict:
        if self.overrides and kind in self.overrides:
            return self.overrides[kind]
        if kind in _NEW_ITEM_KINDS:
            policy = self.new_items or ("review" if self.posture is Posture.STRICT else "tofu")
            return Verdict.HOLD if policy == "review" else Verdict.PROCEED
        return base_verdict(kind, self.posture)

    def decide(self, kinds: Iterable[ChangeKind]) -> PostureDecision:
        """HOLD if any kind holds, else INCONCLUSIVE if any is inconclusive, else PROCEED."""
        holding: list[str] = []
        judged = Verdict.PROCEED
        for kind in kinds:
            v = self.verdict_of(kind)
            if v is Verdict.PROCEED:
                continue
            holding.append(kind.value)
            if v is Verdict.HOLD:
                judged = Verdict.HOLD
            elif judged is Verdict.PROCEED:
                judged = Verdict.INCONCLUSIVE
        enforced = Verdict.PROCEED if self.posture is Posture.MONITOR else judged
        return PostureDecision(enforced, judged, tuple(dict.fromkeys(holding)))
