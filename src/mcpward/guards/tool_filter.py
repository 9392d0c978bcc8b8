"""tool_filter: allow or deny tool names per upstream with globs; hides on list, denies on call."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Allow, Decision, Deny, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.subject import Subject


class ToolFilterRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    upstream: str = Field(default="*", description="Glob over upstream ids this rule applies to.")
    allow: list[str] = Field(
        default_factory=list, description="If non-empty, only tool names matching one glob pass."
    )
    deny: list[str] = Field(
        default_factory=list, description="Tool names matching a glob never pass."
    )


class ToolFilterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: list[ToolFilterRule] = Field(min_length=1)


class ToolFilterGuard(Guard):
    """A tool passes iff every rule for its upstream allows it (allow-list, then deny-list)."""

    kind = "tool_filter"
    hides_listed_items = True
    awaits_io = False
    Options = ToolFilterOptions

    def __init__(self, spec: Any, options: ToolFilterOptions) -> None:
        super().__init__(spec, options)
        self._rules = options.rules
        self._cache: dict[tuple[str, str], bool] = {}

    def permits(self, upstream: str, tool: str) -> bool:
        key = (upstream, tool)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._decide(upstream, tool)
            if len(self._cache) > 65536:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def _decide(self, upstream: str, tool: str) -> bool:
        for rule in self._rules:
            if not fnmatchcase(upstream, rule.upstream):
                continue
            if rule.allow and not any(fnmatchcase(tool, g) for g in rule.allow):
                return False
            if any(fnmatchcase(tool, g) for g in rule.deny):
                return False
        return True

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        tools = subject.payload
        kept = [t for t in tools if self.permits(ctx.server_name, str(t.get("name", "")))]
        if len(kept) == len(tools):
            return Allow()
        hidden = len(tools) - len(kept)
        return Modify(ReplaceTools(kept), evidence={"hidden": hidden})

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        if self.permits(ctx.server_name, subject.name or ""):
            return Allow()
        return Deny(
            code="tool_not_allowed",
            message=f"tool {subject.name!r} of upstream {ctx.server_name!r} "
            "is not allowed by policy",
        )
