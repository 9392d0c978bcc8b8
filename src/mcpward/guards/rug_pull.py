"""rug_pull: pin every tool, prompt and resource contract; HOLD the call when its contract moves.

Wiring only: the gate (`contracts.gate`) decides; this guard feeds it the gateway's catalog and
list results, re-validates tools that may write before they are called, and answers the hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpward.contracts.extract import contracts_of, item_name, snapshot_contracts
from mcpward.contracts.gate import UNLISTED, UNOBSERVED, CheckResult, Gate
from mcpward.contracts.holds import Commands, hold_code, hold_details, hold_message
from mcpward.contracts.markers import MarkerScan
from mcpward.contracts.model import HoldRecord, ItemKind, Verdict
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.contracts.sanitize import sanitize_text
from mcpward.contracts.taxonomy import ChangeKind
from mcpward.guards.detection.scanner import NAME_RULES, ContentScanner
from mcpward.guards.tool_poisoning import DEFINITION_RULES
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Allow, Decision, Deny, Hold, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.registry import guard_kind
from mcpward.pipeline.services import CatalogView, GatewayServices, UpstreamSnapshot
from mcpward.pipeline.subject import Subject
from mcpward.store.pins_sqlite import SqlitePinStore

log = logging.getLogger("mcpward.guards.rug_pull")

VerdictName = Literal["proceed", "hold", "inconclusive"]
NewItems = Literal["tofu", "review"]
_ALLOW = Allow()
MARKER_WEIGHT = 1.0  # weaker findings are context for tool_poisoning's score, not markers


class UpstreamPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    posture: Posture | None = Field(default=None, description="monitor | guard | strict")
    overrides: dict[ChangeKind, VerdictName] = Field(
        default_factory=dict, description="Per change kind: proceed | hold | inconclusive."
    )
    new_tools: NewItems | None = None


class RugPullOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    posture: Posture = Field(
        default=Posture.GUARD, description="monitor (record only) | guard (default) | strict."
    )
    overrides: dict[ChangeKind, VerdictName] = Field(
        default_factory=dict,
        description="Per change kind verdict overriding the posture's table, e.g. "
        "{description-only: proceed}.",
    )
    new_tools: NewItems | None = Field(
        default=None,
        description="Items first seen after an upstream's baseline: tofu (pin and pass) or "
        "review (held until `mcpward pins accept`). Default: tofu, review under strict.",
    )
    upstreams: dict[str, UpstreamPolicy] = Field(
        default_factory=dict, description="Per upstream id: posture, overrides, new_tools."
    )
    withhold_held: bool = Field(
        default=True, description="Leave held tools, prompts and resources out of list results."
    )
    revalidate: bool = Field(
        default=True,
        description="Before calling a tool whose pin is not read-only, re-read the upstream's "
        "list if the last read is older than revalidate_ttl_s.",
    )
    revalidate_ttl_s: float = Field(default=2.0, ge=0, le=3600)
    relist_interval_s: float | None = Field(
        default=None,
        gt=0,
        le=86400,
        description="Also re-list every upstream this often from the guard itself (default: rely "
        "on gateway.relist_interval_s).",
    )

    def table(self, upstream: str) -> PostureTable:
        policy = self.upstreams.get(upstream)
        overrides: dict[ChangeKind, Verdict] = {
            k: Verdict(v.upper()) for k, v in self.overrides.items()
        }
        posture, new_items = self.posture, self.new_tools
        if policy is not None:
            overrides.update({k: Verdict(v.upper()) for k, v in policy.overrides.items()})
            posture = policy.posture or posture
            new_items = policy.new_tools or new_items
        return PostureTable(posture, overrides or None, new_items)


def marker_scan() -> MarkerScan:
    """The tool_poisoning scanner's strong findings (weight >= 1) as marker families: the gate
    reports a family that occurs more often in the live contract than in its pin."""
    scanner = ContentScanner(DEFINITION_RULES, name_rules=NAME_RULES)

    def scan(definition: Any) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for finding in scanner.scan_definition(definition):
            if finding.weight >= MARKER_WEIGHT:
                found.setdefault(finding.family, []).append(finding.path)
        return found

    return scan


def _kind_of_resource(item: Any) -> ItemKind:
    return (
        ItemKind.RESOURCE_TEMPLATE
        if isinstance(item, dict) and "uriTemplate" in item
        else ItemKind.RESOURCE
    )


@guard_kind
class RugPullGuard(Guard):
    """The contract drift gate as a guard kind."""

    kind = "rug_pull"
    Options = RugPullOptions

    def __init__(self, spec: Any, options: RugPullOptions) -> None:
        super().__init__(spec, options)
        self.opts = options
        self._tables: dict[str, PostureTable] = {}
        self._gate: Gate | None = None
        self._catalog: CatalogView | None = None
        self._store: SqlitePinStore | None = None
        self._relist: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def table_for(self, upstream: str) -> PostureTable:
        table = self._tables.get(upstream)
        if table is None:
            table = self._tables[upstream] = self.opts.table(upstream)
        return table

    async def attach(self, services: GatewayServices) -> None:
        self._store = SqlitePinStore(services.state_dir)
        commands = Commands(("--state-dir", str(services.state_dir)))
        self._gate = Gate(self._store, self.table_for, commands, markers=marker_scan())
        self._catalog = services.catalog
        services.catalog.subscribe(self._on_snapshot)
        for upstream in services.catalog.upstream_ids():
            snap = services.catalog.snapshot(upstream)
            if snap is not None:
                await self._on_snapshot(snap)
        if self.opts.relist_interval_s:
            self._relist = asyncio.create_task(self._relist_loop(self.opts.relist_interval_s))

    async def close(self) -> None:
        if self._relist is not None:
            self._relist.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._relist
        if self._store is not None:
            self._store.close()

    async def _relist_loop(self, interval: float) -> None:
        catalog = self._catalog
        assert catalog is not None
        while True:
            await asyncio.sleep(interval)
            for upstream in catalog.upstream_ids():
                try:
                    await catalog.refresh(upstream)  # the listener observes the new snapshot
                except Exception as exc:  # keep re-listing the others
                    log.warning("re-listing upstream %s failed: %s", upstream, type(exc).__name__)

    def _require(self) -> Gate:
        if self._gate is None:
            raise RuntimeError("rug_pull guard used before the gateway attached it")
        return self._gate

    # -- observing ---------------------------------------------------------------------------

    async def _on_snapshot(self, snap: UpstreamSnapshot) -> None:
        self._observe_snapshot(snap)

    def _observe_snapshot(self, snap: UpstreamSnapshot) -> None:
        """A snapshot's lists are complete, except that one the relay started from a single
        list seen on the client path holds empty defaults for the others: an empty list counts
        only in a snapshot that shows it came from a full read (it carries the server's info or
        instructions). Absent instructions are never read as removed instructions."""
        full = snap.server_info is not None or snap.instructions is not None
        lists = {
            ItemKind.TOOL: snap.tools,
            ItemKind.PROMPT: snap.prompts,
            ItemKind.RESOURCE: snap.resources,
            ItemKind.RESOURCE_TEMPLATE: snap.resource_templates,
        }
        complete = [kind for kind, items in lists.items() if items or full]
        contracts = snapshot_contracts(
            tools=snap.tools,
            prompts=snap.prompts,
            resources=snap.resources,
            resource_templates=snap.resource_templates,
            instructions=snap.instructions,
            include_instructions=snap.instructions is not None,
        )
        self._require().observe(snap.upstream, contracts, complete, snap.fetched_at)

    def _sync(self, upstream: str) -> UpstreamSnapshot | None:
        """Observe the catalog's snapshot if it is newer than what the gate has seen."""
        if self._catalog is None:
            return None
        snap = self._catalog.snapshot(upstream)
        seen = self._require().observed_at(upstream)
        if snap is not None and (seen is None or snap.fetched_at > seen):
            self._observe_snapshot(snap)
        return snap

    async def _list(
        self,
        kind_of: Any,
        subject: Subject,
        ctx: GuardContext,
        withheld_kinds: tuple[ItemKind, ...],
    ) -> Decision:
        gate = self._require()
        upstream = ctx.server_name
        self._sync(upstream)
        if not gate.baselined(upstream, withheld_kinds[0]) and self._catalog is not None:
            # first sight: take the baseline from a full read now, so the client's first list
            # is judged against it (any drift between the two reads is then visible)
            snap = await self._catalog.refresh(upstream)
            if snap is not None:
                self._observe_snapshot(snap)
        items = subject.payload if isinstance(subject.payload, list) else []
        by_kind: dict[ItemKind, list[Any]] = {}
        for item in items:
            by_kind.setdefault(kind_of(item), []).append(item)
        contracts = {
            (kind, name): c
            for kind, group in by_kind.items()
            for name, c in contracts_of(kind, group).items()
        }
        gate.observe(upstream, contracts, observed_at=time.monotonic())
        if not self.opts.withhold_held:
            return _ALLOW
        hidden = {kind: gate.withheld(upstream, kind) for kind in withheld_kinds}
        if not any(hidden.values()):
            return _ALLOW
        kept = [i for i in items if item_name(kind_of(i), i) not in hidden.get(kind_of(i), set())]
        return Modify(ReplaceTools(kept), evidence={"withheld": len(items) - len(kept)})

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._list(lambda _i: ItemKind.TOOL, subject, ctx, (ItemKind.TOOL,))

    async def on_prompts_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._list(lambda _i: ItemKind.PROMPT, subject, ctx, (ItemKind.PROMPT,))

    async def on_resources_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._list(
            _kind_of_resource, subject, ctx, (ItemKind.RESOURCE, ItemKind.RESOURCE_TEMPLATE)
        )

    # -- calls -------------------------------------------------------------------------------

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        gate = self._gate
        if gate is None:
            raise RuntimeError("rug_pull guard used before the gateway attached it")
        upstream, name = ctx.server_name, subject.name or ""
        snap = self._sync(upstream)
        result = gate.check(upstream, ItemKind.TOOL, name)
        if result is None:
            if not self.opts.revalidate or not gate.is_destructive(upstream, name):
                return _ALLOW
            if snap is not None and time.monotonic() - snap.fetched_at < self.opts.revalidate_ttl_s:
                return _ALLOW
            return await self._after_refresh(upstream, ItemKind.TOOL, name, revalidating=True)
        return await self._resolve(result, upstream, ItemKind.TOOL, name)

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        upstream, name = ctx.server_name, subject.name or ""
        self._sync(upstream)
        result = self._require().check(upstream, ItemKind.PROMPT, name)
        if result is None:
            return _ALLOW
        return await self._resolve(result, upstream, ItemKind.PROMPT, name)

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        upstream, uri = ctx.server_name, subject.name or ""
        self._sync(upstream)
        result = self._require().check_resource(upstream, uri)
        if result is None:
            return _ALLOW
        if result is UNLISTED:
            return _ALLOW
        return await self._resolve(result, upstream, ItemKind.RESOURCE, uri)

    async def _resolve(
        self, result: CheckResult, upstream: str, kind: ItemKind, name: str
    ) -> Decision:
        """Off the fast path: a hold (maybe accepted meanwhile) or an item the gate never saw."""
        gate = self._require()
        if isinstance(result, HoldRecord):
            if gate.reload_if_changed():
                result = gate.check(upstream, kind, name)
                if result is None:
                    return _ALLOW
            if isinstance(result, HoldRecord):
                return self._hold(result)
        return await self._after_refresh(upstream, kind, name, revalidating=False)

    async def _after_refresh(
        self, upstream: str, kind: ItemKind, name: str, *, revalidating: bool
    ) -> Decision:
        """Re-read the upstream's lists now and decide on what they say."""
        gate = self._require()
        catalog = self._catalog
        asked_at = time.monotonic()
        snap = await catalog.refresh(upstream) if catalog is not None else None
        if catalog is not None and snap is not None and snap.fetched_at < asked_at:
            # the catalog joined a read that began before this call: it may predate the change
            snap = await catalog.refresh(upstream)
        fresh = snap is not None and snap.fetched_at >= asked_at
        if snap is not None:
            self._observe_snapshot(snap)
        result = gate.check(upstream, kind, name)
        log.debug(
            "re-read upstream %s before %s %s: fresh=%s revalidating=%s result=%s",
            upstream, kind.value, sanitize_text(name, 64), fresh, revalidating, repr(result)[:40],
        )  # fmt: skip
        if isinstance(result, HoldRecord):
            return self._hold(result)
        posture = self.table_for(upstream).posture
        if posture is Posture.MONITOR:
            return _ALLOW
        if result is None and (fresh or not revalidating):
            return _ALLOW
        if result is None or result is UNOBSERVED:
            return Deny(
                code="contract_unverifiable",
                message="mcpward could not re-read the contracts of upstream "
                f"'{sanitize_text(upstream, 64)}' to check this call; failing closed",
                details={
                    "upstream": upstream,
                    "item_kind": kind.value,
                    "revalidating": revalidating,
                },
            )
        # UNLISTED: neither pinned nor listed now; there is no contract to hold it to
        item = sanitize_text(name, 128)
        return Hold(
            code="unlisted_item",
            message=f"mcpward held this call: {kind.value} '{item}' is not in the current list "
            f"of upstream '{sanitize_text(upstream, 64)}' and has no pin, so its contract "
            "cannot be checked",
            details={
                "code": "unlisted_item",
                "item_kind": kind.value,
                "item": item,
                "posture": posture.value,
                "verdict": Verdict.INCONCLUSIVE.value,
                "review": gate.commands.show(upstream),
            },
        )

    def _hold(self, hold: HoldRecord) -> Hold:
        gate = self._require()
        return Hold(
            code=hold_code(hold),
            message=hold_message(hold, gate.commands),
            details=hold_details(hold, gate.commands),
            evidence={
                "change_kinds": list(hold.change_kinds),
                "old_hash": hold.old_hash,
                "new_hash": hold.new_hash,
                "posture": hold.posture,
            },
        )
