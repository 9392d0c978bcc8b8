"""What the relay hands the evidence layer about one decision (the port between them).

The relay fills a DecisionRecord; a Recorder turns it into a receipt. Arguments and results are
passed only so the recorder can hash them; they are never stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpward.pipeline.context import Identity
from mcpward.pipeline.executor import GuardRun


@dataclass(slots=True)
class DecisionRecord:
    """One judged message: a call, a get, a read, a filtered list, a hold, a denial or a failure."""

    started_at: float  # time.time() when the client's message arrived
    method: str
    upstream: str | None
    name: str | None  # tool or prompt name (upstream-local) or resource URI
    decision: str  # a value of evidence.vocabulary.PolicyDecision (closed vocabulary)
    session_id: str | None = None
    era: str | None = None
    identity: Identity | None = None
    arguments: Any = None  # hashed, never stored
    result: Any = None  # hashed, never stored
    tool_definition: dict[str, Any] | None = None  # for declared side effects (annotations)
    contract_hash: str | None = None
    runs: list[GuardRun] = field(default_factory=list)
    stopped_by: str | None = None
    error_code: int | None = None
    error_reason: str | None = None
    gateway_ms: float | None = None  # time spent in the gateway, excluding the upstream's
    upstream_ms: float | None = None


class Recorder(Protocol):
    """Receives every decision. `record` returns once the receipt is as durable as configured."""

    async def record(self, record: DecisionRecord) -> None: ...

    async def close(self) -> None: ...


class NullRecorder:
    """Records nothing (evidence disabled)."""

    async def record(self, record: DecisionRecord) -> None:
        return None

    async def close(self) -> None:
        return None
