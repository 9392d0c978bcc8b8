"""access: per-role upstream and tool globs, and the client's consent ceiling over tool
annotations (read_only | no_destructive | full); filters lists per client and denies calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcpward.identity.consent import ConsentCeiling, ceiling_of
from mcpward.pipeline.context import GuardContext, Identity
from mcpward.pipeline.decisions import Allow, Decision, Deny, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import CatalogView, GatewayServices
from mcpward.pipeline.subject import Subject


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AccessRule(Strict):
    upstream: str = Field(default="*", description="Glob over upstream ids.")
    tools: list[str] = Field(default_factory=lambda: ["*"], description="Globs over tool names.")


class AnnotationOverride(Strict):
    """Operator-declared hints for a tool, used instead of what the upstream says."""

    upstream: str = Field(default="*", description="Glob over upstream ids.")
    tool: str = Field(description="Glob over tool names.")
    read_only: bool | None = None
    destructive: bool | None = None


class AccessOptions(Strict):
    roles: dict[str, list[AccessRule]] | None = Field(
        default=None,
        description="Role -> what it may reach. Omitted: no role checks, only the consent ceiling. "
        "A client reaches the union of its roles; an upstream no rule names is hidden entirely.",
    )
    anonymous_roles: list[str] = Field(
        default_factory=list, description="Roles of a session that carries no identity."
    )
    default_ceiling: ConsentCeiling = Field(
        default=ConsentCeiling.FULL,
        description="Ceiling when the identity records none (e.g. the local user over stdio).",
    )
    trust_annotations: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Upstream globs whose tool annotations are believed; for the others every "
        "tool counts as possibly destructive (the spec's defaults for absent hints).",
    )
    annotations: list[AnnotationOverride] = Field(default_factory=list)


def required_ceiling(hints: Mapping[str, Any]) -> ConsentCeiling:
    """The least ceiling a tool needs, reading absent hints with the spec's defaults
    (readOnlyHint false, destructiveHint true)."""
    if hints.get("readOnlyHint") is True:
        return ConsentCeiling.READ_ONLY
    if hints.get("destructiveHint", True) is False:
        return ConsentCeiling.NO_DESTRUCTIVE
    return ConsentCeiling.FULL


_ALLOW = Allow()


class AccessGuard(Guard):
    """Who may see and call what: role globs first, then the annotation ceiling."""

    kind = "access"
    hides_listed_items = True
    Options = AccessOptions

    def __init__(self, spec: Any, options: AccessOptions) -> None:
        super().__init__(spec, options)
        self.opts = options
        self._catalog: CatalogView | None = None

    async def attach(self, services: GatewayServices) -> None:
        self._catalog = services.catalog

    # ---- policy --------------------------------------------------------------------------

    def _roles(self, identity: Identity | None) -> Sequence[str]:
        return identity.roles if identity is not None else self.opts.anonymous_roles

    def _rules(self, identity: Identity | None, upstream: str) -> list[AccessRule] | None:
        """The rules that apply to this upstream; None = role checks are off."""
        if self.opts.roles is None:
            return None
        return [
            rule
            for role in self._roles(identity)
            for rule in self.opts.roles.get(role, ())
            if fnmatchcase(upstream, rule.upstream)
        ]

    def upstream_allowed(self, identity: Identity | None, upstream: str) -> bool:
        rules = self._rules(identity, upstream)
        return rules is None or bool(rules)

    def tool_allowed(self, identity: Identity | None, upstream: str, tool: str) -> bool:
        rules = self._rules(identity, upstream)
        if rules is None:
            return True
        return any(fnmatchcase(tool, glob) for rule in rules for glob in rule.tools)

    def ceiling(self, identity: Identity | None) -> ConsentCeiling:
        return ceiling_of(identity) or self.opts.default_ceiling

    def hints(self, upstream: str, tool: Mapping[str, Any]) -> dict[str, Any]:
        trusted = any(fnmatchcase(upstream, glob) for glob in self.opts.trust_annotations)
        raw = tool.get("annotations") if trusted else None
        hints = dict(raw) if isinstance(raw, Mapping) else {}
        name = str(tool.get("name", ""))
        for override in self.opts.annotations:
            if fnmatchcase(upstream, override.upstream) and fnmatchcase(name, override.tool):
                if override.read_only is not None:
                    hints["readOnlyHint"] = override.read_only
                if override.destructive is not None:
                    hints["destructiveHint"] = override.destructive
        return hints

    def _verdict(
        self, identity: Identity | None, upstream: str, tool: Mapping[str, Any] | None, name: str
    ) -> Deny | None:
        who = (identity.client_id or identity.sub) if identity is not None else "anonymous"
        if not self.tool_allowed(identity, upstream, name):
            return Deny(
                code="role_not_allowed",
                message=f"client {who!r} has no role that allows tool {name!r} of upstream "
                f"{upstream!r}",
            )
        ceiling = self.ceiling(identity)
        if ceiling is ConsentCeiling.FULL:
            return None
        if tool is None:
            return Deny(
                code="consent_ceiling",
                message=f"tool {name!r} of upstream {upstream!r} is not in the catalog, so its "
                f"annotations are unknown; client consent ceiling is {ceiling.value}",
            )
        needed = required_ceiling(self.hints(upstream, tool))
        if ceiling.permits(needed):
            return None
        modifies = needed is ConsentCeiling.NO_DESTRUCTIVE
        what = "may modify state" if modifies else "may be destructive"
        return Deny(
            code="consent_ceiling",
            message=f"tool {name!r} of upstream {upstream!r} {what} (needs {needed.value}); "
            f"client {who!r} has consent ceiling {ceiling.value}",
            details={"needed": needed.value, "ceiling": ceiling.value},
        )

    async def _definition(self, ctx: GuardContext, name: str) -> Mapping[str, Any] | None:
        """The tool's definition as the call's own upstream connection lists it (read once if
        that connection has not been read yet); outside a relay, the context's lists."""
        live = ctx.contracts
        if live is not None:
            snap = live.snapshot or await live.reread()
            return snap.tool(name) if snap is not None else None
        if self._catalog is None:  # not attached to a gateway (unit use): the context's lists
            tools: Sequence[Mapping[str, Any]] = ctx.catalog.get(ctx.server_name, ())
            return next((t for t in tools if t.get("name") == name), None)
        snap = self._catalog.snapshot(ctx.server_name)
        found = snap.tool(name) if snap is not None else None
        if found is None:  # unknown so far: one re-read of that upstream's list
            snap = await self._catalog.refresh(ctx.server_name)
            found = snap.tool(name) if snap is not None else None
        return found

    # ---- hooks ---------------------------------------------------------------------------

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        tools = subject.payload
        kept = [
            t
            for t in tools
            if self._verdict(ctx.identity, ctx.server_name, t, str(t.get("name", ""))) is None
        ]
        if len(kept) == len(tools):
            return Allow()
        return Modify(ReplaceTools(kept), evidence={"hidden": len(tools) - len(kept)})

    def decide_now(self, subject: Subject, ctx: GuardContext) -> Decision | None:
        """Tool calls whose verdict needs no definition, or whose connection was read already,
        are decided without waiting (no deadline timer)."""
        if subject.phase is not Phase.TOOL_INVOKE:
            return None
        name = subject.name or ""
        tool = None
        if self.ceiling(ctx.identity) is not ConsentCeiling.FULL:
            snap = ctx.contracts.snapshot if ctx.contracts is not None else None
            if snap is None:
                return None
            tool = snap.tool(name)
        deny = self._verdict(ctx.identity, ctx.server_name, tool, name)
        return deny if deny is not None else _ALLOW

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        name = subject.name or ""
        tool = None
        if self.ceiling(ctx.identity) is not ConsentCeiling.FULL:
            tool = await self._definition(ctx, name)
        deny = self._verdict(ctx.identity, ctx.server_name, tool, name)
        return deny if deny is not None else _ALLOW

    async def on_prompts_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._whole_upstream_list(subject, ctx)

    async def on_resources_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._whole_upstream_list(subject, ctx)

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._whole_upstream_call(subject, ctx, "prompt")

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._whole_upstream_call(subject, ctx, "resource")

    def _whole_upstream_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        if self.upstream_allowed(ctx.identity, ctx.server_name) or not subject.payload:
            return Allow()
        return Modify(ReplaceTools([]), evidence={"hidden": len(subject.payload)})

    def _whole_upstream_call(self, subject: Subject, ctx: GuardContext, what: str) -> Decision:
        if self.upstream_allowed(ctx.identity, ctx.server_name):
            return Allow()
        return Deny(
            code="role_not_allowed",
            message=f"no role of this client reaches upstream {ctx.server_name!r} "
            f"({what} {subject.name!r})",
        )
