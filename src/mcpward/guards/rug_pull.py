"""rug_pull: pin every tool, prompt and resource contract; HOLD the call when its contract moves.

Wiring only: the gate (`contracts.gate`) decides; this guard feeds it the gateway's catalog and
list results, re-validates tools that may write before they are called, and answers the hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from mcpward.contracts.consult.consult import SemanticConsult
from mcpward.contracts.extract import ContractMap, contracts_of, item_name, snapshot_contracts
from mcpward.contracts.gate import (
    CONSULTING,
    UNLISTED,
    CheckResult,
    ConnectionView,
    Gate,
    Observation,
)
from mcpward.contracts.holds import (
    LISTED_REASONS,
    Commands,
    hold_code,
    hold_details,
    hold_message,
    hold_notice,
    pinned_listing,
)
from mcpward.contracts.markers import MarkerScan
from mcpward.contracts.model import HoldRecord, ItemKind, Verdict
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.contracts.provenance import pin_origin
from mcpward.contracts.sanitize import sanitize_text
from mcpward.contracts.store import PinStore
from mcpward.contracts.taxonomy import ChangeKind
from mcpward.guards.detection.definition_directive import definition_scanner
from mcpward.guards.detection.regex import compile_pending
from mcpward.guards.detection.scanner import ContentScanner, score
from mcpward.guards.rug_pull_consult import build_consult
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Allow, Decision, Deny, Hold, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import (
    CatalogView,
    ClientNotice,
    GatewayServices,
    LiveContracts,
    UpstreamSnapshot,
    no_clients,
)
from mcpward.pipeline.subject import Subject
from mcpward.protocol.uri_template import template_regex
from mcpward.store.factory import open_pin_store, sqlite_context

log = logging.getLogger("mcpward.guards.rug_pull")

VerdictName = Literal["proceed", "hold", "inconclusive"]
NewItems = Literal["tofu", "review"]
_ALLOW = Allow()
_CALL_KINDS = {
    Phase.TOOL_INVOKE: ItemKind.TOOL,
    Phase.PROMPT_REQUEST: ItemKind.PROMPT,
    Phase.RESOURCE_REQUEST: ItemKind.RESOURCE,
}
_VIEW_KEY = "rug_pull.view"  # UpstreamSnapshot.derived entry: the hashed ConnectionView
MARKER_WEIGHT = 1.0  # weaker findings are context for tool_poisoning's score, not markers
CONSULT_ROUNDS = 3  # a call waits for at most this many consults (a contract moving meanwhile)


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
        default=True,
        description="Never list a held item as the server now serves it (false: list it live; "
        "calls are still held).",
    )
    list_held: bool = Field(
        default=True,
        description="List an item held because its contract moved with its pinned (trusted) "
        "definition and a note that it is held, so a client shows it and a call to it gets the "
        "-32010 explanation (false: leave it out of lists). Items whose new definition looks "
        "poisoned, new items and a tampered store stay out.",
    )
    revalidate: bool = Field(
        default=True,
        description="Before a call, re-read the lists of the call's upstream connection if its "
        "last read is older than revalidate_ttl_s (whatever the item's annotations claim).",
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


def marker_scan(scanner: ContentScanner | None = None) -> MarkerScan:
    """The tool_poisoning scanner's strong findings (weight >= 1) as marker families: the gate
    reports a family that occurs more often in the live contract than in its pin."""
    scanner = scanner or definition_scanner()

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


def _snapshot_view(snap: UpstreamSnapshot) -> tuple[ContractMap, list[ItemKind]]:
    """A snapshot's contracts and the kinds it lists in full. Its lists are complete, except
    that one the relay started from a single list seen on the client path holds empty defaults
    for the others: an empty list counts only in a snapshot that shows it came from a full read
    (it carries the server's info or instructions). Absent instructions are never read as
    removed instructions."""
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
    return contracts, complete


def _pinned_text(hold: HoldRecord) -> str | None:
    origin = hold.extra.get("provenance")
    pin = origin.get("pin") if isinstance(origin, dict) else None
    return f"{pin['how']} {pin['at']}" if isinstance(pin, dict) else None


class CatalogContracts:
    """`LiveContracts` over the gateway catalog, for a guard used without a relay session."""

    def __init__(self, catalog: CatalogView, upstream: str) -> None:
        self._catalog = catalog
        self._upstream = upstream

    @property
    def snapshot(self) -> UpstreamSnapshot | None:
        return self._catalog.snapshot(self._upstream)

    async def reread(self) -> UpstreamSnapshot | None:
        asked_at = time.monotonic()
        snap = await self._catalog.refresh(self._upstream)
        if snap is not None and snap.fetched_at < asked_at:
            snap = await self._catalog.refresh(self._upstream)  # joined an older read
        return snap if snap is not None and snap.fetched_at >= asked_at else None


class RugPullGuard(Guard):
    """The contract drift gate as a guard kind."""

    kind = "rug_pull"
    Options = RugPullOptions
    reads_contracts = True

    def __init__(self, spec: Any, options: RugPullOptions) -> None:
        super().__init__(spec, options)
        self.opts = options
        self._tables: dict[str, PostureTable] = {}
        self._gate: Gate | None = None
        self._catalog: CatalogView | None = None
        self._store: PinStore | None = None
        self._relist: asyncio.Task[None] | None = None
        self._identities: dict[str, Any] = {}
        self._evidence_cache: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._consult: SemanticConsult | None = None
        self._scanner: ContentScanner | None = None
        self._tell: ClientNotice = no_clients

    # -- lifecycle -------------------------------------------------------------------------

    def warm(self) -> None:
        compile_pending()  # this kind's rule sets, off the event loop

    def table_for(self, upstream: str) -> PostureTable:
        table = self._tables.get(upstream)
        if table is None:
            table = self._tables[upstream] = self.opts.table(upstream)
        return table

    async def attach(self, services: GatewayServices) -> None:
        context = services.store or sqlite_context(services.state_dir)
        self._store = await asyncio.to_thread(open_pin_store, context)
        self._identities = dict(services.upstream_provenance or services.upstream_identities)
        config_args = ("--config", str(context.config_path)) if context.config_path else ()
        commands = Commands(
            context.cli_args(), services.sandboxable, config_args, services.console_url
        )
        scanner = self._scanner = definition_scanner()
        if services.consult is not None and services.consult.enabled:
            self._consult = build_consult(services.consult, services, scanner)
        self._gate = Gate(
            self._store,
            self.table_for,
            commands,
            markers=marker_scan(scanner),
            identities=services.upstream_provenance or services.upstream_identities,
            consult=self._consult,
        )
        self._catalog = services.catalog
        self._tell = services.tell_clients
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
        if self._consult is not None:
            await self._consult.close()
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
        contracts, complete = _snapshot_view(snap)
        self._announce(self._require().observe(snap.upstream, contracts, complete, snap.fetched_at))

    def _announce(self, observed: Observation) -> None:
        """Tell the clients of each new listed hold at once, with the sentence their next list
        would bring (a session sends each sentence once): a hold made by the gateway's own
        re-read, after list_changed or on its timer, reaches the person without a client list."""
        if not self.opts.withhold_held:
            return
        gate = self._require()
        for hold in observed.new_holds:
            current = gate.held(hold.upstream, hold.kind).get(hold.name)
            if current is hold and self._pinned_listing(hold, hold.new_contract) is not None:
                self._tell(hold.upstream, hold_notice(hold, gate.commands))

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
        if not gate.baselined(upstream, withheld_kinds[0]):
            # first sight: take the baseline from a full read of this connection, so the
            # client's first list is judged against it (drift between the two reads shows)
            live = ctx.contracts if ctx.contracts is not None else self._catalog_contracts(upstream)
            snap = live.snapshot or await live.reread()
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
        observed = gate.observe(upstream, contracts, observed_at=time.monotonic())
        self._announce(observed)  # the other sessions; this one hears it with its list
        if observed.consulting and self._consult is not None:
            # once per contract change, bounded by the deadline: held items stay out of the list
            await self._consult.wait()
            gate.settle(upstream, observed.consulting)
        if not self.opts.withhold_held:
            return _ALLOW
        held = {kind: gate.held(upstream, kind) for kind in withheld_kinds}
        if not any(held.values()):
            return _ALLOW
        kept: list[Any] = []
        notices: list[str] = []
        for item in items:
            kind = kind_of(item)
            hold = held.get(kind, {}).get(item_name(kind, item) or "")
            if hold is None:
                kept.append(item)
                continue
            listed = self._pinned_listing(hold, item)
            if listed is not None:
                kept.append(listed)
                notices.append(hold_notice(hold, gate.commands))
        evidence = {"withheld": len(items) - len(kept)}
        if notices:
            evidence["held_listed"] = len(notices)
        return Modify(ReplaceTools(kept), evidence=evidence, notices=tuple(notices))

    def _pinned_listing(self, hold: HoldRecord, live: Any) -> dict[str, Any] | None:
        """A held item as listed: its pinned definition with a note, when its contract moved
        against a pin and the new definition does not look poisoned (a content guard would drop
        it: it stays out, as it would without a pin)."""
        if not self.opts.list_held or hold.reason not in LISTED_REASONS:
            return None
        if ChangeKind.INJECTION_MARKER_ADDED.value in hold.change_kinds:
            return None
        if self._scanner is not None and score(self._scanner.scan_definition(live)) >= 1.0:
            return None
        pin = self._require().pin(hold.upstream, hold.kind, hold.name)
        if pin is None:
            return None
        return pinned_listing(pin.contract, hold, self._require().commands)

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
        return await self._check_call(ItemKind.TOOL, subject.name or "", ctx)

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._check_call(ItemKind.PROMPT, subject.name or "", ctx)

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._check_call(ItemKind.RESOURCE, subject.name or "", ctx)

    def decide_now(self, subject: Subject, ctx: GuardContext) -> Decision | None:
        """A call whose connection was read recently enough is decided without waiting."""
        kind = _CALL_KINDS.get(subject.phase)
        live = ctx.contracts
        if kind is None or live is None:
            return None
        snap = live.snapshot
        if snap is None or self._stale(snap):
            return None
        return self._decide(kind, subject.name or "", ctx.server_name, snap)

    async def _check_call(self, kind: ItemKind, name: str, ctx: GuardContext) -> Decision:
        """Judge a call against the contract its own upstream connection serves now.

        The relay has read that connection's lists (after its last (re)connect and
        list_changed) before this runs; a read older than `revalidate_ttl_s` is read again first,
        whatever the item's annotations claim. Unchanged contract: a few dict lookups."""
        upstream = ctx.server_name
        live = ctx.contracts if ctx.contracts is not None else self._catalog_contracts(upstream)
        snap = live.snapshot
        if snap is None or self._stale(snap):
            snap = await live.reread()
        if snap is None:
            if self.table_for(upstream).posture is Posture.MONITOR:
                return _ALLOW
            return Deny(
                code="contract_unverifiable",
                message="mcpward could not read the contracts of upstream "
                f"'{sanitize_text(upstream, 64)}' on this connection to check this call; "
                "failing closed",
                details={"upstream": upstream, "item_kind": kind.value},
            )
        for _ in range(CONSULT_ROUNDS):
            decision = self._decide(kind, name, upstream, snap)
            if decision is not None:
                return decision
            if self._consult is None:  # only a consult leaves a call undecided
                return _ALLOW
            # a structurally benign change awaits tier 2: at most its deadline, once per change
            item = (upstream, kind, name)
            await self._consult.wait(item if self._consult.pending(item) else None)
        return self._decide(kind, name, upstream, snap) or self._unsettled()

    def _unsettled(self) -> Decision:
        """The contract kept moving while consults were asked: the structural PROCEED stands."""
        model = self._consult.settings.model if self._consult is not None else ""
        consult = {"outcome": "overloaded", "model": model, "triggers": []}
        return Allow(evidence={"consult": consult})

    def _stale(self, snap: UpstreamSnapshot) -> bool:
        return (
            self.opts.revalidate and time.monotonic() - snap.fetched_at > self.opts.revalidate_ttl_s
        )

    def _decide(
        self, kind: ItemKind, name: str, upstream: str, snap: UpstreamSnapshot
    ) -> Decision | None:
        """The decision on one call against one read of its connection (no waiting); None while
        a consult about the item (or the server's instructions) is being asked."""
        gate = self._require()
        view = self._view(snap)
        result = gate.check_connection(upstream, view, kind, name)
        if kind is ItemKind.RESOURCE and result is UNLISTED:
            result = self._check_templates(upstream, view, name)
        if isinstance(result, HoldRecord) and gate.reload_if_changed():
            result = gate.check_connection(upstream, view, kind, name)  # accepted meanwhile?
        if result is None:
            live_hash = view.hashes.get((kind, name))
            if live_hash is None:
                return _ALLOW
            return Allow(evidence=self._proceed_evidence(upstream, kind, name, live_hash))
        if isinstance(result, HoldRecord):
            return self._hold(result)
        posture = self.table_for(upstream).posture
        if posture is Posture.MONITOR:
            return _ALLOW
        if result is CONSULTING:
            return None
        # UNLISTED: neither pinned nor served by this connection. Nothing for a person to review
        # (not a HOLD), and a name the upstream does not list is never forwarded: a server's
        # hidden, unlisted tool cannot be reached through the gateway. A tool or prompt is
        # answered as MCP answers an unknown one (-32602), so clients see what the server says.
        item = sanitize_text(name, 128)
        return Deny(
            code="unlisted_item",
            message=f"unknown {kind.value} '{item}': upstream '{sanitize_text(upstream, 64)}' "
            "does not list it on this connection (and it has no pin)",
            details={"item_kind": kind.value, "item": item, "upstream": upstream},
            unknown_item=kind in (ItemKind.TOOL, ItemKind.PROMPT),
        )

    def _proceed_evidence(
        self, upstream: str, kind: ItemKind, name: str, live_hash: str
    ) -> dict[str, Any]:
        """What a PROCEED receipt says it was judged against (cached per pin: the hot path)."""
        pin = self._require().pin(upstream, kind, name)
        key = (upstream, kind, name, live_hash, pin.pinned_at if pin else None)
        cached = self._evidence_cache.get(key)
        if cached is None:
            origin = pin_origin(pin)
            cached = {
                "contract_hash": live_hash,
                "pinned": f"{origin['how']} {origin['at']}" if origin else None,
                "server_identity": self._identities.get(upstream),
                "posture": self.table_for(upstream).posture.value,
            }
            consult = self._consult
            verdict = None
            if consult is not None and pin is not None and pin.source == "auto":
                verdict = consult.latest_for(live_hash)
            if verdict is not None:  # re-pinned after a consult: what it said (or why not)
                cached["consult"] = verdict.evidence()
            if len(self._evidence_cache) > 10_000:
                self._evidence_cache.clear()
            self._evidence_cache[key] = cached
        return cached

    def _check_templates(self, upstream: str, view: ConnectionView, uri: str) -> CheckResult:
        """Resources are often dynamic: a URI that is not listed passes unless a template that
        expands to it (served by this connection, or held) has drifted."""
        gate = self._require()
        for key in view.contracts:
            if key[0] is ItemKind.RESOURCE_TEMPLATE and template_regex(key[1]).match(uri):
                result = gate.check_connection(upstream, view, ItemKind.RESOURCE_TEMPLATE, key[1])
                if isinstance(result, HoldRecord):
                    return result
        return gate.held_template(upstream, uri)

    def _view(self, snap: UpstreamSnapshot) -> ConnectionView:
        """The snapshot's contracts and hashes, computed once per snapshot."""
        view = snap.derived.get(_VIEW_KEY)
        if view is None:
            contracts, complete = _snapshot_view(snap)
            view = snap.derived[_VIEW_KEY] = self._require().view(contracts, complete)
        return cast(ConnectionView, view)

    def _catalog_contracts(self, upstream: str) -> LiveContracts:
        """Outside a relay (unit use), the gateway catalog stands in for the connection."""
        if self._catalog is None:
            raise RuntimeError("rug_pull guard used before the gateway attached it")
        return CatalogContracts(self._catalog, upstream)

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
                "pinned": _pinned_text(hold),
                "server_identity": self._identities.get(hold.upstream),
                **_consult_evidence(hold),
            },
        )


def _consult_evidence(hold: HoldRecord) -> dict[str, Any]:
    consult = hold.extra.get("consult") if hold.reason == "consult" else None
    if not isinstance(consult, dict):
        return {}
    return {"consult": {k: consult.get(k) for k in ("outcome", "model", "triggers")}}
