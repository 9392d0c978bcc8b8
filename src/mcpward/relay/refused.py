"""Upstreams a guard refuses before they start (server_allowlist): decided once the guards are
attached, from the configuration alone; a refused upstream gets a connection that never starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mcpward.pipeline.decisions import Deny
from mcpward.pipeline.executor import GuardRun, Pipeline
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import Mode
from mcpward.protocol.errors import UpstreamFailure
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable


@runtime_checkable
class UpstreamGate(Protocol):
    """A guard that can refuse an upstream from its configuration alone (before it starts)."""

    def refuses_upstream(self, upstream: str, upstream_ids: Sequence[str]) -> Deny | None: ...


@dataclass(frozen=True, slots=True)
class Refusal:
    """Which guard refused an upstream, and its denial (what every call to it is answered)."""

    guard_id: str
    kind: str
    deny: Deny

    def run(self) -> GuardRun:
        """The guard's run as a call's receipt records it (decided at start, not per call)."""
        return GuardRun(
            self.guard_id,
            self.kind,
            Phase.REQUEST.value,
            "deny",
            0.0,
            code=self.deny.code,
            evidence={**self.deny.evidence, "decided": "before_start"},
        )

    def describe(self) -> str:
        return f"refused by guard {self.guard_id} ({self.deny.code}): {self.deny.message}"


def may_refuse_upstreams(guard_classes: Sequence[type[Any]]) -> bool:
    """Whether a configured guard kind can refuse an upstream before it starts: then nothing
    may be started before the guards are attached and have decided."""
    return any(issubclass(cls, UpstreamGate) for cls in guard_classes)


def refused_upstreams(pipeline: Pipeline, upstream_ids: Sequence[str]) -> dict[str, Refusal]:
    """Each upstream an enforcing gate refuses (the first gate by priority names the reason).
    A gate in shadow mode refuses nothing: it only records, and the upstream runs."""
    gates = [
        guard
        for guard in pipeline.guards_for(Phase.REQUEST)
        if isinstance(guard, UpstreamGate) and (guard.spec.mode or pipeline.mode) is Mode.ENFORCE
    ]
    refused: dict[str, Refusal] = {}
    for upstream in upstream_ids:
        for guard in gates:
            deny = guard.refuses_upstream(upstream, upstream_ids)
            if deny is not None:
                refused[upstream] = Refusal(guard.id, guard.kind, deny)
                break
    return refused


class RefusedConnection(UpstreamConnection):
    """Stands in for a refused upstream: nothing is spawned or dialled, ever."""

    def __init__(self, upstream_id: str, identity_digest: str, refusal: Refusal) -> None:
        super().__init__(upstream_id)
        self._digest = identity_digest
        self.refusal = refusal

    @property
    def identity_digest(self) -> str:
        return self._digest

    async def start(self) -> None:
        raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, self.refusal.describe())

    async def send(self, message: dict[str, Any]) -> None:
        raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, self.refusal.describe())

    async def receive(self) -> dict[str, Any]:
        raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, self.refusal.describe())

    async def close(self) -> None:
        return None
