"""Lists: tools, prompts, resources and templates, judged per upstream page, namespaced and
merged across upstreams with wrapped cursors; and the gateway's own full read of an upstream.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcpward.evidence.record import DecisionRecord
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import UpstreamSnapshot
from mcpward.protocol import jsonrpc, methods
from mcpward.protocol.eras import META_SERVER_INFO, Era
from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay import incidents, replies
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.relay.live_contracts import ConnectionContracts
from mcpward.relay.naming import CursorError
from mcpward.relay.outcomes import decision_of
from mcpward.relay.routing import Routes
from mcpward.relay.state import SessionState
from mcpward.relay.upstream_calls import UpstreamCalls

log = logging.getLogger("mcpward.relay")

MAX_LIST_PAGES = 200  # a server that paginates forever is cut off, not followed forever
_RESPONSE_PHASES = (Phase.RESPONSE,)

Record = Callable[[DecisionRecord], Awaitable[None]]
Notice = Callable[[str], Awaitable[None]]
ContractsOf = Callable[[UpstreamLink], ConnectionContracts]


@dataclass(frozen=True, slots=True)
class ListKind:
    key: str  # the items' key in the result
    phase: Phase
    capability: str
    snapshot_field: str


LIST_KINDS = {
    methods.TOOLS_LIST: ListKind("tools", Phase.TOOLS_LIST, "tools", "tools"),
    methods.PROMPTS_LIST: ListKind("prompts", Phase.PROMPTS_LIST, "prompts", "prompts"),
    methods.RESOURCES_LIST: ListKind("resources", Phase.RESOURCES_LIST, "resources", "resources"),
    methods.RESOURCE_TEMPLATES_LIST: ListKind(
        "resourceTemplates", Phase.RESOURCES_LIST, "resources", "resource_templates"
    ),
}


class ListRelay:
    """Answers the four list methods for one session and reads upstream snapshots."""

    def __init__(
        self,
        state: SessionState,
        calls: UpstreamCalls,
        routes: Routes,
        contracts_of: ContractsOf,
        record: Record,
        notice: Notice | None = None,
    ) -> None:
        self.state = state
        self.calls = calls
        self.routes = routes
        self.contracts_of = contracts_of
        self.record = record
        self.notice = notice

    async def handle(self, message: Message) -> Message:
        """Answer one list request. A list is judged (the list phase): an internal failure is
        answered -32012 with an incident id and recorded like a judged call's."""
        t0 = time.perf_counter()
        try:
            return await self._handle(message)
        except asyncio.CancelledError:
            raise
        except Exception:
            reply = replies.internal(message.get("id"), str(message.get("method")))
        record = incidents.record_of(message, self.state)
        return await incidents.record_incident(self.record, record, reply, t0)

    async def _handle(self, message: Message) -> Message:
        state = self.state
        request_id = message["id"]
        method = message["method"]
        params = message.get("params") or {}
        era = state.note_era(params)
        kind = LIST_KINDS[method]
        if not state.ns.enabled:
            link = next(iter(state.links.values()))
            key = self.contracts_of(link).key()
            try:
                reply = await self.calls.request(link, method, message.get("params"), request_id)
            except UpstreamError as exc:
                return replies.upstream_unavailable(request_id, exc)
            result = reply.get("result")
            if not isinstance(result, dict):
                return {**reply, "id": request_id}
            complete = "cursor" not in params and not result.get("nextCursor")
            judged = await self._judge_items(link, kind, result, era, complete, method, key)
            if isinstance(judged, dict) and "error" in judged:
                return {**judged, "id": request_id}
            return jsonrpc.result(request_id, judged)
        return await self._aggregate(request_id, method, params, kind, era)

    async def _aggregate(
        self, request_id: RequestId, method: str, params: dict[str, Any], kind: ListKind, era: Era
    ) -> Message:
        state = self.state
        try:
            start, cursor = (
                state.ns.unwrap_cursor(params["cursor"]) if "cursor" in params else (0, None)
            )
        except CursorError as exc:
            return replies.invalid_params(request_id, f"invalid cursor: {exc}")
        order = list(state.links.values())[start:]
        base = {k: v for k, v in params.items() if k != "cursor"}

        async def fetch(index: int, link: UpstreamLink) -> tuple[Message | None, tuple[int, int]]:
            key = self.contracts_of(link).key()
            if link.id in state.services.refused or not state.offers(link, kind.capability):
                return None, key
            upstream_params = dict(base)
            if index == 0 and cursor is not None:
                upstream_params["cursor"] = cursor
            try:
                reply = await self.calls.request(link, method, upstream_params or None, request_id)
            except UpstreamError as exc:
                log.info("listing %s: upstream %s skipped (%s)", method, link.id, exc.reason.value)
                return None, key
            return reply, key

        answers = await asyncio.gather(*(fetch(i, link) for i, link in enumerate(order)))
        items: list[dict[str, Any]] = []
        next_cursor: str | None = None
        for index, (link, (reply, key)) in enumerate(zip(order, answers, strict=True)):
            result = reply.get("result") if reply else None
            if not isinstance(result, dict):
                continue
            complete = not (index == 0 and cursor is not None) and not result.get("nextCursor")
            judged = await self._judge_items(link, kind, result, era, complete, method, key)
            if "error" in judged:
                continue
            for item in judged.get(kind.key) or []:
                items.append(self._outward_item(link.id, kind, item))
            if result.get("nextCursor"):
                next_cursor = state.ns.wrap_cursor(start + index, str(result["nextCursor"]))
                break
        merged: dict[str, Any] = {kind.key: items}
        if next_cursor:
            merged["nextCursor"] = next_cursor
        if era is Era.MODERN:
            # The merged list is per session (guards may filter per client): never shared or cached.
            merged.update(ttlMs=0, cacheScope="private")
        return state.finish(request_id, merged, era)

    def _outward_item(self, upstream: str, kind: ListKind, item: dict[str, Any]) -> dict[str, Any]:
        if kind.key in ("resources", "resourceTemplates"):
            self.routes.learn(upstream, kind.key, item)
            return item
        name = item.get("name")
        if isinstance(name, str):
            return {**item, "name": self.state.ns.outward(upstream, name)}
        return item

    async def _judge_items(
        self,
        link: UpstreamLink,
        kind: ListKind,
        result: dict[str, Any],
        era: Era,
        complete: bool,
        method: str,
        key: tuple[int, int],
    ) -> dict[str, Any]:
        """Run the list phase over one upstream's page; returns the (possibly filtered) result."""
        state = self.state
        pipeline = state.pipeline
        upstream = link.id
        raw_items = result.get(kind.key)
        items = [i for i in raw_items if isinstance(i, dict)] if isinstance(raw_items, list) else []
        if complete:
            await self._note_complete_list(link, kind, items, key)
        if not (pipeline.has(kind.phase) or pipeline.has(Phase.RESPONSE)):
            return result
        started = time.time()
        t0 = time.perf_counter()
        ctx = state.ctx(upstream, method, era, self.contracts_of(link))
        out = await pipeline.run((kind.phase,), None, items, ctx)
        if out.stop is None and pipeline.has(Phase.RESPONSE):
            result = {**result, kind.key: out.payload}
            out = await pipeline.run(_RESPONSE_PHASES, method, result, ctx, out)
            result = out.payload if out.stop is None else result
        elif out.stop is None:
            result = {**result, kind.key: out.payload}
        if self.notice is not None:
            for text in out.notices:
                await self.notice(text)
        if out.modified and era is Era.MODERN and "cacheScope" in result:
            result = {**result, "cacheScope": "private"}  # filtered for this client only
        if out.modified or out.stop is not None or out.shadow_stops:
            await self.record(
                DecisionRecord(
                    started_at=started,
                    method=method,
                    upstream=upstream,
                    name=None,
                    decision=decision_of(out),
                    session_id=state.session_id,
                    era=era.value,
                    identity=state.identity,
                    result=result,
                    runs=out.runs,
                    stopped_by=out.stopped_by,
                    gateway_ms=(time.perf_counter() - t0) * 1000.0,
                )
            )
        if out.stop is not None:
            # A list cannot be half-denied: the whole page from this upstream is withheld.
            log.warning("guard %s withheld %s of %s", out.stopped_by, kind.key, upstream)
            return (
                {kind.key: []}
                if state.ns.enabled
                else replies.stopped(0, out.stopped_by or "?", out.stop, upstream, None)
            )
        return result

    async def _note_complete_list(
        self, link: UpstreamLink, kind: ListKind, items: list[dict[str, Any]], key: tuple[int, int]
    ) -> None:
        """A complete list read on the client path updates this connection's snapshot and the
        gateway-wide catalog (whose listeners, e.g. the pin gate, judge it)."""
        fresh = self.contracts_of(link).note_list(key, kind.snapshot_field, items)
        catalog = self.state.services.catalog
        if fresh is not None:
            await catalog.publish(fresh)
            return
        snap = catalog.snapshot(link.id)
        current = getattr(snap, kind.snapshot_field) if snap else None
        if current == items:
            return
        merged = (
            UpstreamSnapshot(upstream=link.id)
            if snap is None
            else dataclasses.replace(snap, derived={})
        )
        setattr(merged, kind.snapshot_field, items)
        merged.fetched_at = time.monotonic()
        await catalog.publish(merged)

    # ---- the gateway's own full read -----------------------------------------------------

    async def read_snapshot(self, link: UpstreamLink) -> UpstreamSnapshot | None:
        """Read all of one upstream connection's lists (every page), in the session's era."""
        if not link.ready or link.init_result is None:
            return None
        snap = UpstreamSnapshot(upstream=link.id, fetched_at=time.monotonic())
        result = link.init_result
        snap.instructions = (
            result.get("instructions") if isinstance(result.get("instructions"), str) else None
        )
        info = result.get("serverInfo")
        if not isinstance(info, dict):  # 2026-07-28: server/discover carries it in _meta
            meta = result.get("_meta")
            info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        snap.server_info = info if isinstance(info, dict) else None
        for method, kind in LIST_KINDS.items():
            if not self.state.offers(link, kind.capability):
                continue
            items = await self._read_all(link, method, kind.key)
            if items is None:
                if kind.key == "tools":
                    return None
                continue
            setattr(snap, kind.snapshot_field, items)
        return snap

    async def _read_all(
        self, link: UpstreamLink, method: str, key: str
    ) -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = self.state.own_params({"cursor": cursor} if cursor else None)
            reply = await link.request_raw(method, params)
            result = reply.get("result")
            if not isinstance(result, dict):
                return None
            page = result.get(key)
            if isinstance(page, list):
                items.extend(i for i in page if isinstance(i, dict))
            cursor = result.get("nextCursor") if isinstance(result.get("nextCursor"), str) else None
            if not cursor:
                return items
        log.warning("upstream %s: %s exceeded %d pages; list cut", link.id, method, MAX_LIST_PAGES)
        return items
