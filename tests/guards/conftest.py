"""Helpers for the content-guard tests: build a guard from its kind and options, run a hook."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from mcpward.guards.kinds import resolve_guard_kind
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Decision, Modify, ReplacePayload, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject


def replaced_tools(decision: Decision) -> list[dict[str, Any]]:
    """The list a ReplaceTools decision keeps (fails the test on any other decision)."""
    assert isinstance(decision, Modify) and isinstance(decision.action, ReplaceTools), decision
    return decision.action.tools


def replaced_payload(decision: Decision) -> Any:
    """The payload a ReplacePayload decision puts in place (fails the test otherwise)."""
    assert isinstance(decision, Modify) and isinstance(decision.action, ReplacePayload), decision
    return decision.action.payload


def make_guard(kind: str, phases: Sequence[str], config: Mapping[str, Any] | None = None) -> Any:
    cls = resolve_guard_kind(kind)
    spec = GuardSpec(kind=kind, runs_on=[Phase(p) for p in phases], config=dict(config or {}))
    guard: Guard = cls(spec, cls.Options.model_validate(spec.config))
    return guard


def run_hook(
    guard: Any,
    phase: str,
    payload: Any,
    *,
    name: str | None = None,
    upstream: str = "up",
    catalog: Mapping[str, Any] | None = None,
    order: Sequence[str] = (),
) -> Decision:
    ctx = GuardContext(
        server_name=upstream, method="x", catalog=dict(catalog or {}), upstream_order=list(order)
    )
    hook = getattr(guard, f"on_{phase}")
    result: Decision = asyncio.run(hook(Subject(Phase(phase), name, payload), ctx))
    return result
