"""tool_shadowing: across upstreams, drops a tool whose name collides with another upstream's
tool after normalisation, or whose description talks about another upstream's tools.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpward.guards.detection.extract import StructureLimit, definition_texts
from mcpward.guards.detection.names import collision_key
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import AddWarning, Allow, Decision, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.services import CatalogView, GatewayServices
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{2,63}")
# A plain word counts as a tool reference only when quoted and called a tool: "the `search` tool".
_QUOTED_TOOL = re.compile(
    r"[`'\"]([A-Za-z][A-Za-z0-9_.\-]{2,63})[`'\"]\s+(?:tool|function)\b|"
    r"\b(?:tool|function)\s+[`'\"]([A-Za-z][A-Za-z0-9_.\-]{2,63})[`'\"]",
    re.IGNORECASE,
)


class ToolShadowingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    winner: Literal["first_configured", "last_configured"] = Field(
        default="first_configured",
        description="On a name collision, the tool of this upstream (in config order) is kept.",
    )
    action: Literal["drop", "warn"] = "drop"
    check_descriptions: bool = Field(
        default=True, description="Also drop tools whose texts name another upstream's tools."
    )
    strip_decorations: bool = Field(
        default=True, description="Treat `x_v1`, `x_enhanced`, `premium_x` as the name `x`."
    )


@dataclass(frozen=True, slots=True)
class Shadowing:
    tool: str
    reason: Literal["name-collision", "references-other-upstream"]
    other_upstream: str
    other_tool: str
    field: str = "$.name"

    def describe(self) -> dict[str, str]:
        return {
            "tool": self.tool,
            "reason": self.reason,
            "other": f"{self.other_upstream}/{self.other_tool}",
            "field": self.field,
        }


def _distinctive(name: str) -> bool:
    """A name unlikely to be an ordinary word in prose (has a separator, digit or camelCase)."""
    return len(name) >= 4 and (
        any(c in name for c in "_-.")
        or any(c.isdigit() for c in name)
        or name[1:] != name[1:].lower()
    )


def find_shadowing(
    upstream: str,
    tools: Sequence[Mapping[str, Any]],
    catalog: Mapping[str, Sequence[Mapping[str, Any]]],
    order: Sequence[str],
    options: ToolShadowingOptions,
) -> list[Shadowing]:
    """The tools of `upstream` that shadow another upstream's tools, and why."""
    rank = {uid: i for i, uid in enumerate(order)}
    mine = rank.get(upstream, len(rank))
    by_key: dict[str, list[tuple[str, str]]] = {}
    other_names: dict[str, tuple[str, str]] = {}
    for uid, others in catalog.items():
        if uid == upstream:
            continue
        for other in others:
            name = other.get("name")
            if isinstance(name, str) and name:
                by_key.setdefault(collision_key(name, options.strip_decorations), []).append(
                    (uid, name)
                )
                other_names.setdefault(name.casefold(), (uid, name))
    own_names = {str(t.get("name", "")).casefold() for t in tools}
    found: list[Shadowing] = []
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        for uid, other_name in by_key.get(collision_key(name, options.strip_decorations), []):
            theirs = rank.get(uid, len(rank))
            loses = theirs < mine if options.winner == "first_configured" else theirs > mine
            if loses or (theirs == mine and uid < upstream):
                found.append(Shadowing(name, "name-collision", uid, other_name))
                break
        else:
            if options.check_descriptions:
                ref = _reference(tool, own_names, other_names)
                if ref is not None:
                    found.append(ref)
    return found


def _reference(
    tool: Mapping[str, Any], own: set[str], others: dict[str, tuple[str, str]]
) -> Shadowing | None:
    if not others:
        return None
    try:
        texts = [t for t in definition_texts(tool) if not t.is_name]
    except StructureLimit:
        return None  # tool_poisoning reports unscannable definitions
    for text in texts:
        quoted = {m.group(1) or m.group(2) for m in _QUOTED_TOOL.finditer(text.text)}
        for match in _IDENTIFIER.finditer(text.text):
            word = match.group(0).rstrip(".-")
            key = word.casefold()
            if key in own or key not in others:
                continue
            if _distinctive(word) or word in quoted:
                uid, other = others[key]
                return Shadowing(
                    str(tool.get("name")), "references-other-upstream", uid, other, text.path
                )
    return None


class ToolShadowingGuard(Guard):
    """Compares this upstream's list with the catalog of every other upstream."""

    kind = "tool_shadowing"
    awaits_io = False
    Options = ToolShadowingOptions

    def __init__(self, spec: GuardSpec, options: ToolShadowingOptions) -> None:
        super().__init__(spec, options)
        self._catalog: CatalogView | None = None

    async def attach(self, services: GatewayServices) -> None:
        self._catalog = services.catalog

    def _full_catalog(self, ctx: GuardContext) -> dict[str, Sequence[Mapping[str, Any]]]:
        """ctx.catalog, completed from the live catalog for upstreams it does not hold yet."""
        catalog: dict[str, Sequence[Mapping[str, Any]]] = dict(ctx.catalog)
        if self._catalog is not None:
            for uid in self._catalog.upstream_ids():
                if uid not in catalog:
                    snap = self._catalog.snapshot(uid)
                    if snap is not None:
                        catalog[uid] = snap.tools
        return catalog

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        tools = subject.payload if isinstance(subject.payload, list) else []
        catalog = self._full_catalog(ctx)
        order = list(ctx.upstream_order) or sorted(catalog)
        found = find_shadowing(ctx.server_name, tools, catalog, order, self.options)
        if not found:
            return Allow()
        evidence = {
            "upstream": ctx.server_name,
            "action": self.options.action,
            "shadowing": [s.describe() for s in found],
            "counts": {
                reason: sum(1 for s in found if s.reason == reason)
                for reason in sorted({s.reason for s in found})
            },
        }
        if self.options.action == "warn":
            names = ", ".join(
                f"{s.tool} ({s.reason} {s.other_upstream}/{s.other_tool})" for s in found
            )
            return Modify(
                AddWarning(f"tools of {ctx.server_name!r} shadow others: {names}"), evidence
            )
        dropped = {s.tool for s in found}
        return Modify(ReplaceTools([t for t in tools if t.get("name") not in dropped]), evidence)
