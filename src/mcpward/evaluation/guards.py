"""The guards the evaluation runs: the gateway's own classes with their default options."""

from __future__ import annotations

from typing import Literal

from mcpward.guards.response_injection import ResponseInjectionGuard, ResponseInjectionOptions
from mcpward.guards.secrets import SecretsGuard, SecretsOptions
from mcpward.guards.tool_poisoning import ToolPoisoningGuard, ToolPoisoningOptions
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec


def _spec(kind: str, phases: list[Phase]) -> GuardSpec:
    return GuardSpec(kind=kind, runs_on=phases)


def poisoning_guard() -> ToolPoisoningGuard:
    return ToolPoisoningGuard(_spec("tool_poisoning", [Phase.TOOLS_LIST]), ToolPoisoningOptions())


def secrets_guard() -> SecretsGuard:
    return SecretsGuard(_spec("secrets", [Phase.TOOL_RESULT]), SecretsOptions())


def injection_guard(
    learned: bool = True, reads: Literal["cued", "all"] = "cued"
) -> ResponseInjectionGuard:
    """The default response_injection; `learned=False`: its rules alone (to train the scorer);
    `reads="all"`: the opt-in `learned_reads: all`."""
    off = [] if learned else ["learned-directive"]
    return ResponseInjectionGuard(
        _spec("response_injection", [Phase.TOOL_RESULT]),
        ResponseInjectionOptions(disabled_families=off, learned_reads=reads),
    )
