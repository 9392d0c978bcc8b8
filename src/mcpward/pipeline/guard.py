"""The Guard base class: one small class per guard kind, one async hook per phase.

A subclass overrides the `on_<phase>` hooks it supports and declares its options model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Allow, Decision
from mcpward.pipeline.phases import CALL_OF_LIST, Phase
from mcpward.pipeline.services import GatewayServices
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


_ALLOW = Allow()


class Guard:
    """Base class. `kind` names it in config; `Options` validates its `config` block."""

    kind: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions
    # False for pure policy whose hooks never await (no I/O): nothing of theirs can hang, so the
    # executor gives them no deadline (a guard that waited for a CPU on a busy machine has not
    # failed, and a complete verdict stands). They are bounded by their input (max_frame_bytes)
    # and linear-time matching (RE2).
    awaits_io: ClassVar[bool] = True
    # True for guards that judge a call by the contract its upstream connection serves now
    # (the pin gate): the relay then reads that connection's lists before the request phases.
    reads_contracts: ClassVar[bool] = False
    # True for guards that leave items out of a list (tool_filter, tool_poisoning, ...): hiding
    # alone would not stop a client that knows a name, so such a guard also judges the calls to
    # the items of every list it runs at, whatever `runs_on` says (`phases`).
    hides_listed_items: ClassVar[bool] = False

    def __init__(self, spec: GuardSpec, options: Any) -> None:
        self.spec = spec
        self.id: str = spec.id or spec.kind
        self.options = options
        self.phases: frozenset[Phase] = self.effective_phases(spec.runs_on)

    @classmethod
    def effective_phases(cls, runs_on: Iterable[Phase]) -> frozenset[Phase]:
        """`runs_on`, plus the call phase of each list phase in it for a guard that hides
        listed items (when the class judges that call)."""
        phases = set(runs_on)
        if cls.hides_listed_items:
            supported = cls.supported_phases()
            phases |= {CALL_OF_LIST[p] for p in phases & CALL_OF_LIST.keys()} & supported
        return frozenset(phases)

    @classmethod
    def supported_phases(cls) -> frozenset[Phase]:
        """The phases whose hook this class overrides."""
        return frozenset(
            phase
            for phase in Phase
            if getattr(cls, f"on_{phase.value}") is not getattr(Guard, f"on_{phase.value}")
        )

    def decide_now(self, subject: Subject, ctx: GuardContext) -> Decision | None:
        """A verdict that needs no waiting, or None to run the phase hook under its deadline.

        For guards whose hooks may await (`awaits_io`): the executor calls this first and, when
        it answers, skips the wall-clock deadline timer (a pin check that finds no change, a
        role check).
        Called for every phase the guard runs on; `subject.phase` says which."""
        return None

    async def attach(self, services: GatewayServices) -> None:
        """Called once when the gateway is assembled, before the first message."""

    def warm(self) -> None:
        """Build what the first message would otherwise wait for (compiled rule sets). Runs in
        a worker thread once the gateway is serving; must be safe alongside the hooks."""

    async def close(self) -> None:
        """Release resources (sandboxes, clients) at shutdown."""

    async def on_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_response(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_prompts_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_resources_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_tool_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_prompt_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_resource_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_upstream_error(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW

    async def on_upstream_message(self, subject: Subject, ctx: GuardContext) -> Decision:
        return _ALLOW
