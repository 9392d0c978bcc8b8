"""tool_filter: allow or deny tool names per upstream with globs; hides on list, denies on call.

Tool globs ignore case and compatibility forms unless a rule says `case_sensitive: true`:
`*delete*` also stops `Delete_All`, `DELETE_ALL` and `DELETE` in fullwidth letters (U+FF24...).
"""

from __future__ import annotations

import unicodedata
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
    case_sensitive: bool = Field(
        default=False,
        description="Match this rule's tool globs exactly as written. By default they ignore case "
        "and Unicode compatibility forms (NFKC), so `*delete*` also matches `Delete_All`.",
    )


def folded(name: str) -> str:
    """The form a case-insensitive glob and a tool name are compared in (NFKC, then casefold)."""
    return unicodedata.normalize("NFKC", name).casefold()


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
        # Per rule: its upstream glob and its allow/deny globs in the form they are matched in.
        self._globs = [
            (
                rule.upstream,
                rule.case_sensitive,
                [g if rule.case_sensitive else folded(g) for g in rule.allow],
                [g if rule.case_sensitive else folded(g) for g in rule.deny],
            )
            for rule in options.rules
        ]
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
        tool_folded = folded(tool)
        for upstream_glob, exact, allow, deny in self._globs:
            if not fnmatchcase(upstream, upstream_glob):  # upstream ids are config's own names
                continue
            name = tool if exact else tool_folded
            if allow and not any(fnmatchcase(name, g) for g in allow):
                return False
            if any(fnmatchcase(name, g) for g in deny):
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
