"""The records the gate keeps: what is pinned per upstream item, and what is held and why.

Plain dataclasses shared by the gate, the pin stores and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ItemKind(StrEnum):
    """What a pinned contract describes. Names are unique per (upstream, kind)."""

    TOOL = "tool"
    PROMPT = "prompt"
    RESOURCE = "resource"  # keyed by uri
    RESOURCE_TEMPLATE = "resource_template"  # keyed by uriTemplate
    SERVER = "server"  # the server's instructions (name "instructions")


INSTRUCTIONS = "instructions"
WHOLE_UPSTREAM = "*"  # the name of an upstream-wide hold (tampered pins, changed instructions)


class Verdict(StrEnum):
    PROCEED = "PROCEED"
    HOLD = "HOLD"
    INCONCLUSIVE = "INCONCLUSIVE"

    @property
    def holds(self) -> bool:
        return self is not Verdict.PROCEED


@dataclass(slots=True)
class Pin:
    """One pinned contract. `hash` is `contract_hash(contract)`; the store MACs the whole row."""

    upstream: str
    kind: ItemKind
    name: str
    hash: str
    contract: Any  # the captured definition (dict), or the instructions string
    pinned_at: float  # time.time()
    source: str = "tofu"  # tofu | auto (benign drift re-pinned) | accept | import

    @property
    def key(self) -> tuple[ItemKind, str]:
        return (self.kind, self.name)


@dataclass(slots=True)
class HoldRecord:
    """A contract that moved against its pin and is held until a human accepts (or it reverts).

    `new_contract` is what `pins accept` will pin: exactly what was classified, never whatever is
    live at accept time. `enforced` is False under monitor (recorded, not blocking).
    """

    upstream: str
    kind: ItemKind
    name: str
    old_hash: str | None
    new_hash: str | None
    change_kinds: list[str]
    changes: list[dict[str, Any]]
    posture: str
    verdict: Verdict
    reason: str  # drift | new | removed | tampered | consult (tier 2 raised a PROCEED)
    first_seen: float
    last_seen: float
    new_contract: Any = None
    enforced: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[ItemKind, str]:
        return (self.kind, self.name)
