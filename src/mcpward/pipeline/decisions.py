"""What a guard may answer: Allow, Deny, Hold, or Modify with one action.

`evidence` on any decision is receipt-facing metadata (family ids, counts); never raw content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Allow:
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Deny:
    """Stop the chain; the client gets JSON-RPC -32013 with the guard id and this code.

    `unknown_item`: the request names a tool or prompt that does not exist; MCP answers that
    -32602 (Invalid params), so the client gets that code, with the same `data`."""

    code: str
    message: str
    details: dict[str, Any] | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    unknown_item: bool = False


@dataclass(frozen=True, slots=True)
class Hold:
    """Stop the chain pending human review; the client gets JSON-RPC -32010 with `details`."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReplaceTools:
    """Replace the listed items (tools, prompts or resources) with this list."""

    tools: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RedactFields:
    """Replace the values at these JSONPath expressions (over the phase payload)."""

    paths: list[str]
    replacement: str = "[REDACTED]"


@dataclass(frozen=True, slots=True)
class AddWarning:
    message: str


@dataclass(frozen=True, slots=True)
class ReplacePayload:
    """Replace the whole phase payload (used for span-level rewrites such as secret redaction)."""

    payload: Any


ModifyAction = ReplaceTools | RedactFields | AddWarning | ReplacePayload


@dataclass(frozen=True, slots=True)
class Modify:
    """`notices`: sentences for the person at the client (e.g. "this tool is held"), sent to
    it as a `notifications/message` warning, once per session."""

    action: ModifyAction
    evidence: dict[str, Any] = field(default_factory=dict)
    notices: tuple[str, ...] = ()


Decision = Allow | Deny | Hold | Modify
