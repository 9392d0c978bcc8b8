"""The ambiguity triggers: which structurally benign changes are worth a semantic consult.

A pure function over one classified diff; the scoring probes (poisoning score, "asks for data")
are injected by the guard that owns the detection rules, so this layer stays policy-free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mcpward.contracts.consult.settings import Trigger
from mcpward.contracts.taxonomy import Change, ChangeKind, Family, family

_ADDED_OPTIONAL = frozenset(
    {ChangeKind.ADDED_OPTIONAL_PARAM, ChangeKind.PROMPT_ARGUMENT_ADDED_OPTIONAL}
)


@dataclass(frozen=True, slots=True)
class TriggerProbes:
    """Detectors the triggers ask. `poisoning_score(definition)` is the tool_poisoning score of a
    whole definition; `asks_for_data(name, spec)` says whether a parameter (its name and schema
    or prompt-argument object) reads like a request for data."""

    poisoning_score: Callable[[Any], float]
    asks_for_data: Callable[[str, Any], bool]


def ambiguity_triggers(
    old: Any,
    new: Any,
    changes: Sequence[Change],
    enabled: Iterable[Trigger],
    probes: TriggerProbes,
) -> list[Trigger]:
    """The enabled triggers this change fires (empty: the structural PROCEED needs no consult).

    Called only for a change the posture already judged PROCEED, so no strong injection marker
    was introduced (that kind holds on its own)."""
    on = set(enabled)
    fired: list[Trigger] = []
    if Trigger.DESCRIPTION_REWRITTEN in on and any(family(c.kind) is Family.TEXT for c in changes):
        fired.append(Trigger.DESCRIPTION_REWRITTEN)
    if Trigger.OPTIONAL_PARAM_ASKS_FOR_DATA in on and any(
        c.kind in _ADDED_OPTIONAL and probes.asks_for_data(c.detail or c.path, c.after)
        for c in changes
    ):
        fired.append(Trigger.OPTIONAL_PARAM_ASKS_FOR_DATA)
    if Trigger.POISONING_BELOW_THRESHOLD in on:
        before = probes.poisoning_score(old) if old is not None else 0.0
        if probes.poisoning_score(new) > before:
            fired.append(Trigger.POISONING_BELOW_THRESHOLD)
    return fired
