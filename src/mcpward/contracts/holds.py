"""What a HOLD tells people: the JSON-RPC error data, the one-line message, the log banner.

Every attacker-controlled string passes through `sanitize_text`; commands are shell-quoted.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from mcpward.contracts.clearance import validatable, verdict_of
from mcpward.contracts.model import INSTRUCTIONS, WHOLE_UPSTREAM, HoldRecord, ItemKind
from mcpward.contracts.provenance import HOLD_MEANING
from mcpward.contracts.sanitize import is_plain_name, sanitize_text

MAX_CHANGES_IN_DATA = 20


@dataclass(frozen=True, slots=True)
class Commands:
    """How the CLI reaches the same pin store: extra arguments such as `--state-dir DIR`.
    `sandboxable`: the upstreams tier 3 can validate (stdio, or HTTP marked as owned);
    `config_args`: the gateway config `mcpward validate` starts them from (none: not offered)."""

    store_args: tuple[str, ...] = ()
    sandboxable: frozenset[str] = field(default_factory=frozenset)
    config_args: tuple[str, ...] = ()
    console_url: str | None = None  # where the review console is served, when configured

    def _line(self, *parts: str) -> str:
        return shlex.join(["mcpward", *parts, *self.store_args])

    def _target(self, hold: HoldRecord) -> list[str]:
        parts = [hold.upstream]
        if hold.name != WHOLE_UPSTREAM and is_plain_name(hold.name):
            parts.append(hold.name)
        if hold.kind not in (ItemKind.TOOL, ItemKind.SERVER):
            parts += ["--kind", hold.kind.value]
        return parts

    def holds(self) -> str:
        return self._line("holds")

    def show(self, upstream: str) -> str:
        return self._line("pins", "show", upstream)

    def reset(self, upstream: str) -> str:
        """Forget an upstream's pins; its next listing is pinned afresh."""
        return self._line("pins", "revoke", upstream, "--all")

    def review(self, hold: HoldRecord) -> str:
        if hold.reason == "tampered":
            return self.show(hold.upstream)
        if hold.kind is ItemKind.SERVER:
            return self._line("pins", "diff", hold.upstream, "--kind", "server")
        return self._line("pins", "diff", *self._target(hold))

    def validate(self, hold: HoldRecord) -> str | None:
        """`mcpward validate UPSTREAM TOOL`, where tier 3 is available for this hold."""
        if not self.config_args or hold.upstream not in self.sandboxable:
            return None
        if not validatable(hold) or not is_plain_name(hold.name):
            return None
        return shlex.join(["mcpward", "validate", hold.upstream, hold.name, *self.config_args])

    def accept(self, hold: HoldRecord) -> str:
        if hold.reason == "tampered":
            return self.reset(hold.upstream)  # an untrusted baseline cannot be accepted
        if hold.kind is ItemKind.SERVER:
            return self._line(
                "pins",
                "accept",
                hold.upstream,
                "--kind",
                "server",
                "--hash",
                hold.new_hash or "gone",
            )
        return self._line("pins", "accept", *self._target(hold), "--hash", hold.new_hash or "gone")


def hold_code(hold: HoldRecord) -> str:
    """The guard code of a HOLD (closed vocabulary)."""
    if hold.reason == "tampered":
        return "pin_store_tampered"
    if hold.reason == "new":
        return "new_item_review"
    if hold.reason == "removed":
        return "item_removed"
    if hold.reason == "consult":
        return "consult_hold"
    if hold.kind is ItemKind.SERVER and hold.name == INSTRUCTIONS:
        return "instructions_changed"
    return "contract_drift"


def _what(hold: HoldRecord) -> str:
    if hold.kind is ItemKind.SERVER:
        return "the pin store" if hold.name == WHOLE_UPSTREAM else "the server instructions"
    label = hold.kind.value.replace("_", " ")
    return f"{label} '{sanitize_text(hold.name, 80)}'"


def _summary(hold: HoldRecord, limit: int = 4) -> str:
    parts = []
    for change in hold.changes[:limit]:
        detail = change.get("detail") or ""
        kind = change.get("kind", "")
        parts.append(f"{kind} ({sanitize_text(detail, 60)})" if detail else str(kind))
    more = len(hold.changes) - limit
    if more > 0:
        parts.append(f"+{more} more")
    return ", ".join(parts) or ", ".join(hold.change_kinds)


def _consult_reason(hold: HoldRecord) -> str:
    consult = hold.extra.get("consult")
    reason = consult.get("reason") if isinstance(consult, dict) else None
    return sanitize_text(reason, 200) if reason else "no reason given"


def hold_message(hold: HoldRecord, commands: Commands) -> str:
    """The JSON-RPC error message: one sanitised line a person can act on."""
    upstream = sanitize_text(hold.upstream, 64)
    if hold.reason == "tampered":
        return (
            f"mcpward held this call: the pins of upstream '{upstream}' fail verification "
            f"(the pin store was changed outside mcpward). Inspect: {commands.review(hold)}"
        )
    if hold.reason == "new":
        lead = f"{_what(hold)} of upstream '{upstream}': new since the baseline, awaiting review"
    elif hold.reason == "removed":
        lead = f"{_what(hold)} of upstream '{upstream}': no longer listed"
    elif hold.reason == "consult":
        lead = (
            f"{_what(hold)} of upstream '{upstream}' changed against its pin ({_summary(hold)}) "
            f"and the semantic consult flagged it: {_consult_reason(hold)}"
        )
    else:
        lead = f"{_what(hold)} of upstream '{upstream}' changed against its pin: {_summary(hold)}"
    message = (
        f"mcpward held this call before it ran: {lead}. A person must review the change: "
        f"{commands.review(hold)}; to trust it: {commands.accept(hold)}{_console(commands)}"
    )
    validate = commands.validate(hold)
    if validate is not None:
        message += f". Or validate its behaviour in a sandbox: {validate}"
    return message


def _console(commands: Commands) -> str:
    return f"; or in the console: {commands.console_url}" if commands.console_url else ""


# Kinds of hold whose item is still listed, with its pinned (trusted) definition: the contract
# moved against a pin. New items have no pin, removed ones nothing to list, and a tampered store
# no trusted pin.
LISTED_REASONS = frozenset({"drift", "consult"})


def hold_note(hold: HoldRecord, commands: Commands) -> str:
    """The one line added to a held item's listed (pinned) description."""
    return (
        f"[mcpward: HELD. This {hold.kind.value.replace('_', ' ')} changed on its server "
        f"({', '.join(hold.change_kinds[:3]) or 'changed'}); what is listed is the version "
        f"approved before. A call to it is held until a person reviews: {commands.review(hold)}]"
    )


def hold_notice(hold: HoldRecord, commands: Commands) -> str:
    """The sentence a client is sent (notifications/message) when it sees a held item."""
    upstream = sanitize_text(hold.upstream, 64)
    return (
        f"mcpward held {_what(hold)} of upstream '{upstream}': {_summary(hold)}. It stays "
        f"listed as approved; calls to it are held before they run. Review: "
        f"{commands.review(hold)}; accept: {commands.accept(hold)}{_console(commands)}"
    )


def pinned_listing(pinned: Any, hold: HoldRecord, commands: Commands) -> dict[str, Any] | None:
    """The held item as the client lists it: its pinned definition with the note appended to
    its description; None if the pinned contract is not a definition."""
    if not isinstance(pinned, dict):
        return None
    description = pinned.get("description")
    note = hold_note(hold, commands)
    text = f"{description}\n\n{note}" if isinstance(description, str) and description else note
    return {**pinned, "description": text}


def hold_details(hold: HoldRecord, commands: Commands) -> dict[str, Any]:
    """The structured part of JSON-RPC -32010 `data` (the relay adds upstream and tool)."""
    changes = [
        {
            k: (sanitize_text(v, 200) if isinstance(v, str) else v)
            for k, v in c.items()
            if k in ("kind", "path", "detail")
        }
        for c in hold.changes[:MAX_CHANGES_IN_DATA]
    ]
    details: dict[str, Any] = {
        "code": hold_code(hold),
        "item_kind": hold.kind.value,
        "item": sanitize_text(hold.name, 128),
        "old_hash": hold.old_hash,
        "new_hash": hold.new_hash,
        "change_kinds": list(hold.change_kinds),
        "changes": changes,
        "posture": hold.posture,
        "verdict": hold.verdict.value,
        "review": commands.review(hold),
        "accept": commands.accept(hold),
    }
    if len(hold.changes) > MAX_CHANGES_IN_DATA:
        details["changes_truncated"] = len(hold.changes) - MAX_CHANGES_IN_DATA
    if hold.reason == "tampered":
        details["problem"] = sanitize_text(hold.extra.get("problem", ""), 300)
    if hold.reason == "consult":
        consult = hold.extra.get("consult")
        consult = consult if isinstance(consult, dict) else {}
        details["reason"] = "consult"
        details["consult"] = {
            "model": sanitize_text(consult.get("model", ""), 200),
            "reason": _consult_reason(hold),
            "triggers": [str(t) for t in consult.get("triggers", [])],
        }
    validate = commands.validate(hold)
    if validate is not None:
        details["validate"] = validate
    verdict = verdict_of(hold)
    if verdict is not None:
        details["validation"] = {
            "verdict": verdict.get("verdict"),
            "at": verdict.get("at"),
            "contradictions": [
                o for o in verdict.get("observations", []) if o.get("contradiction")
            ][:MAX_CHANGES_IN_DATA],
        }
    origin = hold.extra.get("provenance")
    details["provenance"] = origin if isinstance(origin, dict) else {"meaning": HOLD_MEANING}
    return details


def hold_banner(hold: HoldRecord, commands: Commands) -> str:
    """The log line when a hold is first recorded (names, kinds and commands; never bodies)."""
    enforced = "held" if hold.enforced else "observed (monitor: not enforced)"
    return (
        f"mcpward: {enforced}: {_what(hold)} of upstream '{sanitize_text(hold.upstream, 64)}' "
        f"[{hold.verdict.value}, posture {hold.posture}]: {_summary(hold, 6)}. "
        f"Review: {commands.review(hold)}  Accept: {commands.accept(hold)}"
    )


def hold_headline(hold: HoldRecord) -> str:
    """One line naming a hold: held or only observed, what, why and since when."""
    state = "HELD" if hold.enforced else "observed (monitor, not enforced)"
    since = time.strftime("%Y-%m-%d %H:%M", time.localtime(hold.first_seen))
    return (
        f"{state}: {_what(hold)} of upstream '{sanitize_text(hold.upstream, 64)}' "
        f"({hold_code(hold)}): {_summary(hold)}; since {since}"
    )


def identity_text(identity: Any) -> str:
    """A server identity (a digest, or a mapping of digests) as short readable text."""
    if isinstance(identity, dict):
        parts = [
            f"{key.replace('_', ' ')} {str(value)[:12]}" for key, value in identity.items() if value
        ]
        return ", ".join(parts) or "unknown"
    return sanitize_text(str(identity), 64) if identity else "unknown"
