"""A tier-3 verdict: CLEARED, FAILED or UNAVAILABLE, with every observation and its provenance.

Closed vocabularies; the report is what the ledger entry and the hold carry (no values: case
labels, paths, addresses and schema keywords only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

VALIDATION_MEANING = (
    "Observed in a no-egress sandbox with generated inputs: a CLEARED verdict says this battery "
    "found nothing that contradicts the declared contract there, not that the tool is safe. A "
    "sandbox is not the real environment: without its secrets, network or data a server can "
    "behave differently. It releases the hold for the running gateway only; it never pins."
)


class Outcome(StrEnum):
    CLEARED = "CLEARED"
    FAILED = "FAILED"
    UNAVAILABLE = "UNAVAILABLE"


class Unavailable(StrEnum):
    """Why nothing could be concluded (the hold stays)."""

    NO_HOLD = "no_hold"  # the item is not held (or not a tool)
    NOT_BEHAVIOURAL = "not_behavioural"  # the hold has kinds only a person can settle
    NO_ISOLATOR = "no_isolator"
    REMOTE_UNOWNED = "remote_unowned"  # an HTTP upstream the config does not mark as owned
    UNKNOWN_UPSTREAM = "unknown_upstream"
    SPAWN_FAILED = "spawn_failed"
    TRANSPORT_ERROR = "transport_error"
    TIMEOUT = "timeout"
    CONTRACT_MISMATCH = "contract_mismatch"  # the fresh copy does not list the held contract
    NO_BATTERY = "no_battery"  # the input schema gave no usable case
    NOT_OBSERVED = "not_observed"  # no valid call succeeded: behaviour was never seen
    PARTIAL = "partial"  # the owner-authorized leg could not observe what the hold is about


class Finding(StrEnum):
    """One observation's kind. Those in CONTRADICTIONS make the verdict FAILED."""

    OUTPUT_OFF_SCHEMA = "output_off_schema"
    INVALID_INPUT_EXECUTED = "invalid_input_executed"
    WRITE_BY_READ_ONLY = "write_by_read_only"
    CONNECT_BY_CLOSED_WORLD = "connect_by_closed_world"
    CONNECT_ATTEMPT = "connect_attempt"  # by a tool that may reach out (open world)
    WRITE = "write"  # by a tool that does not claim read-only
    LEFTOVER_PROCESSES = "leftover_processes"
    CALL_ERROR = "call_error"  # a valid input answered with an error (not a contradiction)
    STARTUP = "startup"  # something the server did before any call


CONTRADICTIONS = frozenset(
    {
        Finding.OUTPUT_OFF_SCHEMA,
        Finding.INVALID_INPUT_EXECUTED,
        Finding.WRITE_BY_READ_ONLY,
        Finding.CONNECT_BY_CLOSED_WORLD,
    }
)


@dataclass(frozen=True, slots=True)
class Observation:
    finding: Finding
    case: str  # the battery case's label ("" before any call)
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {
            "finding": self.finding.value,
            "contradiction": self.finding in CONTRADICTIONS,
            "case": self.case,
            "detail": self.detail,
        }


@dataclass(slots=True)
class Report:
    """One validation of one held tool."""

    upstream: str
    item: str
    held_hash: str | None
    leg: str  # sandbox | owner_authorized | none
    seed: int
    outcome: Outcome = Outcome.UNAVAILABLE
    reason: Unavailable | None = None
    detail: str = ""
    battery_size: int = 0
    calls_made: int = 0
    observations: list[Observation] = field(default_factory=list)
    isolation: dict[str, Any] = field(default_factory=dict)
    cannot_see: list[str] = field(default_factory=list)
    at: float = field(default_factory=time.time)
    requested_by: str = ""

    def unavailable(self, reason: Unavailable, detail: str = "") -> Report:
        self.outcome, self.reason, self.detail = Outcome.UNAVAILABLE, reason, detail
        return self

    def decide(self, *, valid_succeeded: int) -> Report:
        """FAILED on any contradiction; UNAVAILABLE if behaviour was never seen; else CLEARED."""
        if any(o.finding in CONTRADICTIONS for o in self.observations):
            self.outcome, self.reason = Outcome.FAILED, None
        elif valid_succeeded == 0:
            self.unavailable(Unavailable.NOT_OBSERVED, "no valid call succeeded in the sandbox")
        else:
            self.outcome, self.reason = Outcome.CLEARED, None
        return self

    def provenance(self) -> dict[str, Any]:
        return {
            "tier_reached": 3,
            "verdict_scope": "behavioural",
            "leg": self.leg,
            "seed": self.seed,
            "battery_size": self.battery_size,
            "calls_made": self.calls_made,
            "isolation": self.isolation,
            "cannot_see": list(self.cannot_see),
            "meaning": VALIDATION_MEANING,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.outcome.value,
            "reason": self.reason.value if self.reason else None,
            "detail": self.detail,
            "upstream": self.upstream,
            "item": self.item,
            "held_hash": self.held_hash,
            "at": self.at,
            "requested_by": self.requested_by,
            "observations": [o.to_json() for o in self.observations],
            "provenance": self.provenance(),
        }
