"""One client session: routes every client message to the right upstream and judges it once.

Requests are judged by the pipeline on the parsed object and the re-serialisation of what was
judged is forwarded; answers come back through the pipeline too, with ids restored.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mcpward.evidence.record import DecisionRecord
from mcpward.pipeline.context import GuardContext, Identity
from mcpward.pipeline.executor import Outcome
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import UpstreamSnapshot
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import (
    LATEST_HANDSHAKE,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN_VERSIONS,
    Era,
    complete_result,
    message_era,
)
from mcpward.protocol.errors import UpstreamFailure
from mcpward.protocol.jsonrpc import Frame, FrameKind, Message, RequestId
from mcpward.protocol.uri_template import template_regex
from mcpward.relay import replies
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.relay.merge import GATEWAY_INFO, merge_discover, merge_initialize
from mcpward.relay.naming import CursorError

if TYPE_CHECKING:
    from mcpward.relay.gateway import Gateway

log = logging.getLogger("mcpward.relay")

MAX_LIST_PAGES = 200  # a server that paginates forever is cut off, not followed forever


class Downstream(Protocol):
    """Where the session's messages to the client go (a stdio pipe, an HTTP stream, ...)."""

    async def send(self, message: Message, related_request_id: RequestId | None) -> None: ...


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


@dataclass(frozen=True, slots=True)
class CallKind:
    """A judged call method: its phases, and where its name and payload are in params."""

    invoke_phase: Phase
    result_phase: Phase
    name_key: str  # "name" or "uri"
    payload_key: str | None  # "arguments", or None = the whole params


CALL_KINDS = {
    methods.TOOLS_CALL: CallKind(Phase.TOOL_INVOKE, Phase.TOOL_RESULT, "name", "arguments"),
    methods.PROMPTS_GET: CallKind(Phase.PROMPT_REQUEST, Phase.PROMPT_RESULT, "name", "arguments"),
    methods.RESOURCES_READ: CallKind(Phase.RESOURCE_REQUEST, Phase.RESOURCE_RESULT, "uri", None),
}

_REQUEST_PHASES = (Phase.REQUEST,)
_RESPONSE_PHASES = (Phase.RESPONSE,)


def _decision_of(out: Outcome, error_code: int | None = None) -> str:
    from mcpward.pipeline.decisions import Hold

    if out.stop is not None:
        return "hold" if isinstance(out.stop, Hold) else "deny"
    if out.shadow_stops:
        return (
            "would_hold_dry_run"
            if isinstance(out.shadow_stops[0][1], Hold)
            else "would_deny_dry_run"
        )
    if error_code is not None:
        return "error"
    if out.modified:
        return "redact" if any(run.evidence.get("redactions") for run in out.runs) else "modify"
    return "allow"


class Session:
    """The state of one client: its era, its upstream links, and its in-flight requests."""

    def __init__(
        self,
        gateway: Gateway,
        downstream: Downstream,
        identity: Identity | None,
        session_id: str | None,
    ) -> None:
        self.g = gateway
        self.downstream = downstream
        self.identity = identity
        self.session_id = session_id
        self.ns = gateway.namespace
        self.pipeline = gateway.pipeline
        self.era: Era | None = None
        self.client_caps: dict[str, Any] = {}
        self.modern_version: str | None = None
        self.links: dict[str, UpstreamLink] = {
            upstream_id: gateway.make_link(
                upstream_id, self._on_upstream_message, self._on_link_state
            )
            for upstream_id in gateway.upstream_ids
        }
        self._fetchers: dict[str, Callable[[], Awaitable[UpstreamSnapshot | None]]] = {}
        for upstream_id, link in self.links.items():
            fetcher = self._fetcher_for(link)
            self._fetchers[upstream_id] = fetcher
            gateway.catalog.set_fetcher(upstream_id, fetcher)
        self._inflight: dict[RequestId, asyncio.Task[None]] = {}
        self._progress_owner: dict[object, RequestId] = {}
        # (upstream id, str(our request id)) -> the client's request id, while it is in flight:
        # what an upstream says about a request (its HTTP stream, a subscription tag) names
        # our id; the client knows the request by its own.
        self._owners: dict[tuple[str, str], RequestId] = {}
        self._server_requests: dict[int, tuple[UpstreamLink, RequestId]] = {}
        self._server_progress: dict[object, UpstreamLink] = {}
        self._gw_ids = itertools.count(1)
        self._resource_routes: dict[str, str] = {}
        self._template_routes: list[tuple[re.Pattern[str], str]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._routes: dict[RequestId, str] = {}  # client request id -> upstream it went to
        self._closed = False
        self._handlers: dict[str, Callable[[Message], Awaitable[Message | None]]] = {
            methods.INITIALIZE: self._initialize,
            methods.DISCOVER: self._discover,
            methods.PING: self._ping,
            methods.TOOLS_CALL: self._judged_call,
            methods.PROMPTS_GET: self._judged_call,
            methods.RESOURCES_READ: self._judged_call,
            methods.RESOURCES_SUBSCRIBE: self._resource_op,
            methods.RESOURCES_UNSUBSCRIBE: self._resource_op,
            methods.COMPLETION_COMPLETE: self._complete,
            methods.LOGGING_SET_LEVEL: self._fan_out,
            methods.SUBSCRIPTIONS_LISTEN: self._listen,
        }
        for method in LIST_KINDS:
            self._handlers[method] = self._list

    # ---- client -> gateway -------------------------------------------------------------

    async def handle(self, frame: Frame) -> None:
        """Take one parsed client message. Requests run concurrently; the rest in order."""
        kind = frame.kind
        if kind is FrameKind.REQUEST:
            request_id = frame.message["id"]
            if request_id in self._inflight:
                await self._send(
                    jsonrpc.error(
                        request_id, errors.INVALID_REQUEST, "request id is already in use"
                    ),
                    None,
                )
                return
            task = asyncio.create_task(self._serve(frame.message))
            self._inflight[request_id] = task
        elif kind is FrameKind.NOTIFICATION:
            await self._client_notification(frame.message)
        else:
            await self._client_response(frame.message)

    async def _serve(self, message: Message) -> None:
        request_id = message["id"]
        method = message["method"]
        try:
            handler = self._handlers.get(method, self._forward_other)
            try:
                reply = await handler(message)
            except asyncio.CancelledError:
                raise
            except Exception:
                reply = replies.internal(request_id, method)
            if reply is not None:
                result = reply.get("result")
                if isinstance(result, dict) and "resultType" not in result and _is_modern(message):
                    result["resultType"] = "complete"  # e.g. from a bridged handshake-only upstream
                await self._send(reply, request_id)
        except asyncio.CancelledError:
            pass  # the client cancelled: no answer is sent (the upstream was told)
        finally:
            self._inflight.pop(request_id, None)

    async def _client_notification(self, message: Message) -> None:
        method = message["method"]
        params = message.get("params") or {}
        if method == methods.INITIALIZED:
            for link in self.links.values():
                if link.up and link.init_result is not None:
                    link.initialized_sent = True
                    await link.send_raw(message)
            self._spawn(self._refresh_all())
        elif method == methods.CANCELLED:
            task = self._inflight.get(params.get("requestId"))  # type: ignore[arg-type]
            if task is not None:
                task.cancel()
        elif method == methods.PROGRESS:
            owner = self._server_progress.get(params.get("progressToken"))
            if owner is not None:
                await owner.send_raw(message)
        else:
            for link in self.links.values():
                await link.send_raw(message)

    async def _client_response(self, message: Message) -> None:
        gw_id = message.get("id")
        entry = self._server_requests.pop(gw_id, None) if isinstance(gw_id, int) else None
        if entry is None:
            log.debug("client answered an unknown server request id; dropped")
            return
        link, upstream_id = entry
        await link.send_raw({**message, "id": upstream_id})

    # ---- upstream -> gateway -----------------------------------------------------------

    async def _on_upstream_message(
        self, link: UpstreamLink, message: Message, carried_by: Any = None
    ) -> None:
        """A message from an upstream; `carried_by` is our request whose stream carried it."""
        method = message.get("method")
        if method is None:
            return  # an answer to nothing we asked: dropped
        if "id" in message:
            await self._upstream_request(link, message, self._related_for(link, carried_by))
            return
        # A notification belongs to a request only if that request's stream carried it.
        related = self._owners.get((link.id, str(carried_by))) if carried_by is not None else None
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and META_SUBSCRIPTION_ID in meta:
            related = self._owners.get((link.id, str(meta[META_SUBSCRIPTION_ID])))
            if related is None:
                log.debug("upstream %s: notification for a subscription not open; dropped", link.id)
                return
            meta = {**meta, META_SUBSCRIPTION_ID: related}
            message = {**message, "params": {**params, "_meta": meta}}
        if method == methods.PROGRESS:
            related = self._progress_owner.get(params.get("progressToken"), related)
        elif method == methods.CANCELLED:
            upstream_rid = params.get("requestId")
            for gw_id, (owner, rid) in list(self._server_requests.items()):
                if owner is link and rid == upstream_rid:
                    del self._server_requests[gw_id]
                    message = {**message, "params": {**params, "requestId": gw_id}}
                    break
            else:
                return
        elif method in methods.LIST_CHANGED:
            self._spawn(self.g.catalog.refresh(link.id))
        await self._send(message, related)

    async def _upstream_request(
        self, link: UpstreamLink, message: Message, related: RequestId | None
    ) -> None:
        method = message["method"]
        upstream_rid = message["id"]
        if method == methods.PING:
            await link.send_raw(jsonrpc.result(upstream_rid, {}))
            return
        capability = methods.SERVER_REQUEST_CAPABILITY.get(method)
        if capability is not None and capability not in self.client_caps:
            await link.send_raw(
                jsonrpc.error(
                    upstream_rid,
                    errors.METHOD_NOT_FOUND,
                    f"the client did not declare the {capability!r} capability",
                )
            )
            return
        gw_id = next(self._gw_ids)
        self._server_requests[gw_id] = (link, upstream_rid)
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            self._server_progress[meta["progressToken"]] = link
        await self._send({**message, "id": gw_id}, related)

    def _related_for(self, link: UpstreamLink, carried_by: Any) -> RequestId | None:
        """The client request a server-initiated message belongs to: the one whose stream
        carried it, else the only request in flight to that upstream, else none."""
        if carried_by is not None:
            owner = self._owners.get((link.id, str(carried_by)))
            if owner is not None:
                return owner
        candidates = [rid for rid, up in self._routes.items() if up == link.id]
        return candidates[0] if len(candidates) == 1 else None

    async def _on_link_state(self, link: UpstreamLink) -> None:
        """An upstream went down or came back: its items change, so tell the client."""
        if link.up:
            await self.g.catalog.refresh(link.id)
        if self.era is not None:
            for kind in ("tools", "prompts", "resources"):
                caps = (link.init_result or {}).get("capabilities") or {}
                if kind == "tools" or kind in caps:
                    await self._send(
                        jsonrpc.notification(f"notifications/{kind}/list_changed"), None
                    )

    # ---- helpers -------------------------------------------------------------------------

    async def _send(self, message: Message, related: RequestId | None) -> None:
        if self._closed:
            return
        try:
            await self.downstream.send(message, related)
        except Exception as exc:
            log.debug("client send failed: %s", type(exc).__name__)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _ctx(self, upstream: str, method: str, era: Era) -> GuardContext:
        return GuardContext(
            server_name=upstream,
            method=method,
            era=era,
            identity=self.identity,
            session_id=self.session_id,
            catalog=self.g.catalog.tools_view,
            upstream_order=self.g.upstream_ids,
        )

    def _note_era(self, params: dict[str, Any]) -> Era:
        era = message_era(params)
        if era is Era.MODERN:
            self.era = Era.MODERN
            meta = params.get("_meta") or {}
            self.modern_version = meta.get(META_PROTOCOL_VERSION)
            caps = meta.get(META_CLIENT_CAPABILITIES)
            if isinstance(caps, dict):
                self.client_caps = caps
        return era

    def _own_params(self, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Params for the gateway's own upstream requests, with era-correct _meta."""
        if self.era is not Era.MODERN:
            return params
        out = dict(params or {})
        out["_meta"] = {META_PROTOCOL_VERSION: self.modern_version, META_CLIENT_CAPABILITIES: {}}
        return out

    async def _request(
        self,
        link: UpstreamLink,
        method: str,
        params: dict[str, Any] | None,
        client_rid: RequestId,
        timeout: float | None = None,
    ) -> Message:
        await link.ensure_started()
        if self.era is Era.MODERN and link.init_result is None:
            await self._prepare_modern(link)
        token = None
        meta = params.get("_meta") if params else None
        if isinstance(meta, dict) and "progressToken" in meta:
            token = meta["progressToken"]
            self._progress_owner[token] = client_rid
        self._routes[client_rid] = link.id
        key = (link.id, str(link.new_request_id()))
        self._owners[key] = client_rid
        try:
            return await link.request_raw(method, params, timeout, int(key[1]))
        finally:
            self._routes.pop(client_rid, None)
            self._owners.pop(key, None)
            if token is not None:
                self._progress_owner.pop(token, None)

    async def _record(self, record: DecisionRecord) -> None:
        await self.g.recorder.record(record)

    def _finish(self, request_id: RequestId, result: dict[str, Any], era: Era) -> Message:
        return jsonrpc.result(
            request_id, complete_result(result, era) if era is Era.MODERN else result
        )

    # ---- handshake -------------------------------------------------------------------------

    async def _initialize(self, message: Message) -> Message:
        request_id = message["id"]
        params = message.get("params") or {}
        self.era = Era.HANDSHAKE
        caps = params.get("capabilities")
        self.client_caps = caps if isinstance(caps, dict) else {}
        outcomes = await asyncio.gather(
            *(self._init_link(link, params) for link in self.links.values()), return_exceptions=True
        )
        pairs = list(zip(self.links.values(), outcomes, strict=True))
        if not self.ns.enabled:
            link, outcome = pairs[0]
            if isinstance(outcome, UpstreamError):
                return replies.upstream_unavailable(request_id, outcome)
            if isinstance(outcome, BaseException):
                raise outcome
            return {**outcome, "id": request_id}
        good = []
        for link, outcome in pairs:
            if isinstance(outcome, dict) and "result" in outcome:
                good.append((link.id, outcome["result"]))
            else:
                log.warning("upstream %s did not initialize: %s", link.id, _describe(outcome))
        if not good:
            first = next(o for _, o in pairs)
            if isinstance(first, UpstreamError):
                return replies.upstream_unavailable(request_id, first)
            return jsonrpc.error(
                request_id,
                errors.UPSTREAM_UNAVAILABLE,
                "no upstream could be initialized",
                {"reason": "not_connected"},
            )
        return jsonrpc.result(request_id, merge_initialize(params.get("protocolVersion"), good))

    async def _init_link(self, link: UpstreamLink, params: dict[str, Any]) -> Message:
        if link.modern_committed:
            await link.reconnect()
        await link.ensure_started()
        reply = await link.request_raw(
            methods.INITIALIZE, params, self.g.settings.connect_timeout_s
        )
        if isinstance(reply.get("result"), dict):
            link.init_params = params
            link.init_result = reply["result"]
        return reply

    async def _discover(self, message: Message) -> Message:
        request_id = message["id"]
        params = message.get("params") or {}
        era = self._note_era(params)
        if not self.ns.enabled:
            # One upstream: transparent. A handshake-only server's error reaches the client, which
            # then falls back to initialize (and keeps sampling, elicitation and roots).
            link = next(iter(self.links.values()))
            try:
                outcome = await self._discover_link(link, params)
            except UpstreamError as exc:
                return replies.upstream_unavailable(request_id, exc)
            if "result" in outcome:
                self._spawn(self._refresh_all())
            return {**outcome, "id": request_id}
        outcomes = await asyncio.gather(
            *(self._discover_or_bridge(link, params) for link in self.links.values()),
            return_exceptions=True,
        )
        good = []
        for link, answer in zip(self.links.values(), outcomes, strict=True):
            if isinstance(answer, dict):
                good.append((link.id, answer))
            else:
                log.warning(
                    "upstream %s did not answer server/discover: %s", link.id, _describe(answer)
                )
        if not good:
            return jsonrpc.error(
                request_id,
                errors.UPSTREAM_UNAVAILABLE,
                "no upstream answered server/discover",
                {"reason": "not_connected"},
            )
        if era is Era.MODERN:
            self._spawn(self._refresh_all())
        return jsonrpc.result(request_id, merge_discover(good))

    async def _discover_link(self, link: UpstreamLink, params: dict[str, Any]) -> Message:
        await link.ensure_started()
        # Set before sending: a dual-era server commits on receipt, even if we never see the answer.
        link.modern_committed = True
        reply = await link.request_raw(methods.DISCOVER, params, self.g.settings.connect_timeout_s)
        if isinstance(reply.get("result"), dict):
            link.init_result = reply["result"]
        return reply

    async def _discover_or_bridge(
        self, link: UpstreamLink, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A DiscoverResult for this upstream: its own, or one bridged from a handshake."""
        reply = await self._discover_link(link, params)
        if isinstance(reply.get("result"), dict):
            return reply["result"]
        return await self._bridge(link)

    async def _bridge(self, link: UpstreamLink) -> dict[str, Any]:
        """Open a handshake-only upstream for a 2026-07-28 client: the gateway does the handshake.

        The upstream is told of no client capabilities, so it sends no server->client requests
        (they have no 2026-07-28 form to translate into). Results get `resultType` on the way out.
        """
        if link.modern_committed and link.init_result is not None:
            await link.reconnect()
        init = {
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": {},
            "clientInfo": dict(GATEWAY_INFO),
        }
        reply = await link.request_raw(methods.INITIALIZE, init, self.g.settings.connect_timeout_s)
        result = reply.get("result")
        if not isinstance(result, dict):
            raise UpstreamError(link.id, UpstreamFailure.NOT_CONNECTED, "initialize refused")
        link.init_params, link.init_result = init, result
        link.modern_committed = False
        link.initialized_sent = True
        await link.notify(methods.INITIALIZED, None)
        bridged: dict[str, Any] = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": result.get("capabilities") or {},
        }
        if isinstance(result.get("instructions"), str):
            bridged["instructions"] = result["instructions"]
        return bridged

    async def _prepare_modern(self, link: UpstreamLink) -> None:
        """Before a 2026-07-28 request reaches an upstream nobody has opened yet (no discover)."""
        async with link.prepare_lock:
            if link.init_result is not None:
                return
            meta: dict[str, Any] = {
                META_PROTOCOL_VERSION: self.modern_version,
                META_CLIENT_CAPABILITIES: {},
            }
            await self._discover_or_bridge(link, {"_meta": meta})

    async def _ping(self, message: Message) -> Message:
        era = self._note_era(message.get("params") or {})
        return self._finish(message["id"], {}, era)

    # ---- lists ---------------------------------------------------------------------------

    async def _list(self, message: Message) -> Message:
        request_id = message["id"]
        method = message["method"]
        params = message.get("params") or {}
        era = self._note_era(params)
        kind = LIST_KINDS[method]
        if not self.ns.enabled:
            link = next(iter(self.links.values()))
            try:
                reply = await self._request(link, method, message.get("params"), request_id)
            except UpstreamError as exc:
                return replies.upstream_unavailable(request_id, exc)
            result = reply.get("result")
            if not isinstance(result, dict):
                return {**reply, "id": request_id}
            complete = "cursor" not in params and not result.get("nextCursor")
            filtered = await self._judge_items(link.id, kind, result, era, complete, method)
            if isinstance(filtered, dict) and "error" in filtered:
                return {**filtered, "id": request_id}
            return jsonrpc.result(request_id, filtered)
        return await self._aggregate_list(request_id, method, params, kind, era)

    async def _aggregate_list(
        self, request_id: RequestId, method: str, params: dict[str, Any], kind: ListKind, era: Era
    ) -> Message:
        try:
            start, cursor = (
                self.ns.unwrap_cursor(params["cursor"]) if "cursor" in params else (0, None)
            )
        except CursorError as exc:
            return replies.invalid_params(request_id, f"invalid cursor: {exc}")
        order = list(self.links.values())[start:]
        base = {k: v for k, v in params.items() if k != "cursor"}

        async def fetch(index: int, link: UpstreamLink) -> Message | None:
            if not self._offers(link, kind.capability):
                return None
            upstream_params = dict(base)
            if index == 0 and cursor is not None:
                upstream_params["cursor"] = cursor
            try:
                return await self._request(link, method, upstream_params or None, request_id)
            except UpstreamError as exc:
                log.info("listing %s: upstream %s skipped (%s)", method, link.id, exc.reason.value)
                return None

        replies_ = await asyncio.gather(*(fetch(i, link) for i, link in enumerate(order)))
        items: list[dict[str, Any]] = []
        next_cursor: str | None = None
        for index, (link, reply) in enumerate(zip(order, replies_, strict=True)):
            result = reply.get("result") if reply else None
            if not isinstance(result, dict):
                continue
            complete = not (index == 0 and cursor is not None) and not result.get("nextCursor")
            judged = await self._judge_items(link.id, kind, result, era, complete, method)
            if "error" in judged:
                continue
            for item in judged.get(kind.key) or []:
                items.append(self._outward_item(link.id, kind, item))
            if result.get("nextCursor"):
                next_cursor = self.ns.wrap_cursor(start + index, str(result["nextCursor"]))
                break
        merged: dict[str, Any] = {kind.key: items}
        if next_cursor:
            merged["nextCursor"] = next_cursor
        if era is Era.MODERN:
            # The merged list is per session (guards may filter per client): never shared or cached.
            merged.update(ttlMs=0, cacheScope="private")
        return self._finish(request_id, merged, era)

    def _offers(self, link: UpstreamLink, capability: str) -> bool:
        if link.init_result is None:
            return True
        caps = link.init_result.get("capabilities")
        return not isinstance(caps, dict) or capability in caps

    def _outward_item(self, upstream: str, kind: ListKind, item: dict[str, Any]) -> dict[str, Any]:
        if kind.key == "resources" and isinstance(item.get("uri"), str):
            self._resource_routes[item["uri"]] = upstream
            return item
        if kind.key == "resourceTemplates" and isinstance(item.get("uriTemplate"), str):
            self._template_routes.append((template_regex(item["uriTemplate"]), upstream))
            return item
        name = item.get("name")
        if isinstance(name, str):
            return {**item, "name": self.ns.outward(upstream, name)}
        return item

    async def _judge_items(
        self,
        upstream: str,
        kind: ListKind,
        result: dict[str, Any],
        era: Era,
        complete: bool,
        method: str,
    ) -> dict[str, Any]:
        """Run the list phase over one upstream's page; returns the (possibly filtered) result."""
        raw_items = result.get(kind.key)
        items = [i for i in raw_items if isinstance(i, dict)] if isinstance(raw_items, list) else []
        if complete:
            await self._note_complete_list(upstream, kind, items)
        if not (self.pipeline.has(kind.phase) or self.pipeline.has(Phase.RESPONSE)):
            return result
        started = time.time()
        t0 = time.perf_counter()
        ctx = self._ctx(upstream, method, era)
        out = await self.pipeline.run((kind.phase,), None, items, ctx)
        if out.stop is None and self.pipeline.has(Phase.RESPONSE):
            result = {**result, kind.key: out.payload}
            out = await self.pipeline.run(_RESPONSE_PHASES, method, result, ctx, out)
            result = out.payload if out.stop is None else result
        elif out.stop is None:
            result = {**result, kind.key: out.payload}
        if out.modified and era is Era.MODERN and "cacheScope" in result:
            result = {**result, "cacheScope": "private"}  # filtered for this client only
        if out.modified or out.stop is not None or out.shadow_stops:
            await self._record(
                DecisionRecord(
                    started_at=started,
                    method=method,
                    upstream=upstream,
                    name=None,
                    decision=_decision_of(out),
                    session_id=self.session_id,
                    era=era.value,
                    identity=self.identity,
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
                if self.ns.enabled
                else replies.stopped(0, out.stopped_by or "?", out.stop, upstream, None)
            )
        return result

    async def _note_complete_list(
        self, upstream: str, kind: ListKind, items: list[dict[str, Any]]
    ) -> None:
        snap = self.g.catalog.snapshot(upstream)
        current = getattr(snap, kind.snapshot_field) if snap else None
        if current == items:
            return
        fresh = UpstreamSnapshot(upstream=upstream) if snap is None else dataclasses.replace(snap)
        setattr(fresh, kind.snapshot_field, items)
        fresh.fetched_at = time.monotonic()
        await self.g.catalog.publish(fresh)

    # ---- judged calls: tools/call, prompts/get, resources/read ------------------------------

    def _route_uri(self, uri: str) -> str | None:
        if not self.ns.enabled:
            return self.g.upstream_ids[0]
        if uri in self._resource_routes:
            return self._resource_routes[uri]
        for pattern, upstream in self._template_routes:
            if pattern.match(uri):
                return upstream
        offering = [
            u
            for u, link in self.links.items()
            if self._offers(link, "resources") and link.init_result
        ]
        return offering[0] if len(offering) == 1 else None

    async def _judged_call(self, message: Message) -> Message:
        request_id = message["id"]
        method = message["method"]
        params = message.get("params") or {}
        started = time.time()
        t0 = time.perf_counter()
        call = CALL_KINDS[method]
        era = self._note_era(params)
        name = params.get(call.name_key)
        if not isinstance(name, str) or not name:
            return replies.invalid_params(request_id, f"{method} needs a string {call.name_key!r}")
        if call.name_key == "uri":
            upstream = self._route_uri(name)
            if upstream is None:
                await self._refresh_all()
                upstream = self._route_uri(name)
            if upstream is None:
                return replies.invalid_params(request_id, f"Resource not found: {name}")
            local = name
        else:
            route = self.ns.inward(name)
            if route is None:
                what = "tool" if method == methods.TOOLS_CALL else "prompt"
                return replies.invalid_params(request_id, f"Unknown {what}: {name}")
            upstream, local = route
        link = self.links[upstream]
        if call.payload_key is None:
            payload: Any = params
        else:
            payload = params.get(call.payload_key)
            if payload is None:
                payload = {}
            elif not isinstance(payload, dict):
                return replies.invalid_params(request_id, f"{call.payload_key!r} must be an object")
        ctx = self._ctx(upstream, method, era)
        out = Outcome(payload=payload)
        pipeline = self.pipeline
        if pipeline.has(Phase.REQUEST):
            out = await pipeline.run(_REQUEST_PHASES, method, params, ctx, out)
            if out.payload is not params:
                params = out.payload
                payload = params if call.payload_key is None else params.get(call.payload_key) or {}
            out.payload = payload
        if out.stop is None and pipeline.has(call.invoke_phase):
            out = await pipeline.run((call.invoke_phase,), local, payload, ctx, out)
            payload = out.payload
        record = DecisionRecord(
            started_at=started,
            method=method,
            upstream=upstream,
            name=local,
            decision="allow",
            session_id=self.session_id,
            era=era.value,
            identity=self.identity,
            arguments=payload,
            tool_definition=self._definition(upstream, method, local),
        )
        if out.stop is not None:
            reply = replies.stopped(request_id, out.stopped_by or "?", out.stop, upstream, local)
            return await self._close_record(record, out, reply, t0, None)
        if call.payload_key is None:
            forward = dict(payload)
            forward["uri"] = local
        else:
            forward = dict(params)
            forward[call.name_key] = local
            if call.payload_key in params or out.modified:
                forward[call.payload_key] = payload
        timeout = None
        t_up = time.perf_counter()
        try:
            reply = await self._request(link, method, forward, request_id, timeout)
        except UpstreamError as exc:
            record.error_reason = exc.reason.value
            return await self._close_record(
                record, out, replies.upstream_unavailable(request_id, exc), t0, None
            )
        upstream_ms = (time.perf_counter() - t_up) * 1000.0
        result = reply.get("result")
        if not isinstance(result, dict):
            return await self._close_record(
                record, out, {**reply, "id": request_id}, t0, upstream_ms
            )
        if result.get("resultType") == "input_required":
            # MRTR: the retry is a new request and is judged again in full.
            return await self._close_record(
                record, out, jsonrpc.result(request_id, result), t0, upstream_ms
            )
        if pipeline.has(call.result_phase) or pipeline.has(Phase.RESPONSE):
            out = await pipeline.run((call.result_phase, Phase.RESPONSE), local, result, ctx, out)
            if out.stop is not None:
                reply = replies.stopped(
                    request_id, out.stopped_by or "?", out.stop, upstream, local
                )
                return await self._close_record(record, out, reply, t0, upstream_ms)
            result = out.payload
        if out.warnings:
            result = _with_warnings(result, out.warnings, method)
        record.result = result
        return await self._close_record(
            record, out, jsonrpc.result(request_id, result), t0, upstream_ms
        )

    async def _close_record(
        self,
        record: DecisionRecord,
        out: Outcome,
        reply: Message,
        t0: float,
        upstream_ms: float | None,
    ) -> Message:
        error = reply.get("error")
        record.error_code = error.get("code") if isinstance(error, dict) else None
        record.decision = _decision_of(out, record.error_code)
        record.runs = out.runs
        record.stopped_by = out.stopped_by
        for run in out.runs:  # the pin gate says which contract the call was judged against
            contract = run.evidence.get("contract_hash") or run.evidence.get("new_hash")
            if isinstance(contract, str):
                record.contract_hash = contract
        record.upstream_ms = upstream_ms
        total = (time.perf_counter() - t0) * 1000.0
        record.gateway_ms = total - (upstream_ms or 0.0)
        await self._record(record)
        return reply

    def _definition(self, upstream: str, method: str, local: str) -> dict[str, Any] | None:
        if method != methods.TOOLS_CALL:
            return None
        snap = self.g.catalog.snapshot(upstream)
        return snap.tool(local) if snap is not None else None

    # ---- other routed requests ---------------------------------------------------------------

    async def _resource_op(self, message: Message) -> Message:
        params = message.get("params") or {}
        uri = params.get("uri")
        if not isinstance(uri, str):
            return replies.invalid_params(
                message["id"], f"{message['method']} needs a string 'uri'"
            )
        upstream = self._route_uri(uri)
        if upstream is None:
            return replies.invalid_params(message["id"], f"Resource not found: {uri}")
        return await self._forward(self.links[upstream], message, params)

    async def _complete(self, message: Message) -> Message:
        params = message.get("params") or {}
        raw_ref = params.get("ref")
        ref: dict[str, Any] = raw_ref if isinstance(raw_ref, dict) else {}
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            route = self.ns.inward(ref["name"])
            if route is None:
                return replies.invalid_params(message["id"], f"Unknown prompt: {ref['name']}")
            params = {**params, "ref": {**ref, "name": route[1]}}
            return await self._forward(self.links[route[0]], message, params)
        uri = ref.get("uri")
        upstream = self._route_uri(uri) if isinstance(uri, str) else None
        if upstream is None:
            return replies.invalid_params(message["id"], "completion/complete: unknown reference")
        return await self._forward(self.links[upstream], message, params)

    async def _fan_out(self, message: Message) -> Message:
        """Send to every live upstream (logging/setLevel); answer with the first success."""
        params = message.get("params")
        era = self._note_era(params or {})
        live = [link for link in self.links.values() if link.up]
        outcomes = await asyncio.gather(
            *(self._request(link, message["method"], params, message["id"]) for link in live),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, dict) and isinstance(outcome.get("result"), dict):
                return self._finish(message["id"], outcome["result"], era)
        return _first_answer(message["id"], outcomes)

    async def _listen(self, message: Message) -> Message:
        """subscriptions/listen: held open on every upstream until the client cancels it."""
        params = message.get("params")
        self._note_era(params or {})
        live = list(self.links.values())
        if not self.ns.enabled:
            return await self._forward(live[0], message, params, timeout=math.inf)
        outcomes = await asyncio.gather(
            *(
                self._request(link, message["method"], params, message["id"], math.inf)
                for link in live
            ),
            return_exceptions=True,
        )
        return _first_answer(message["id"], outcomes)

    async def _forward_other(self, message: Message) -> Message:
        """Methods the gateway does not know: passed through untouched (one upstream) or by name."""
        params = message.get("params")
        if not self.ns.enabled:
            return await self._forward(next(iter(self.links.values())), message, params)
        name = (params or {}).get("name")
        route = self.ns.inward(name) if isinstance(name, str) else None
        if route is None:
            return jsonrpc.error(
                message["id"],
                errors.METHOD_NOT_FOUND,
                f"method {message['method']!r} cannot be routed across {len(self.links)} upstreams",
            )
        return await self._forward(
            self.links[route[0]], message, {**(params or {}), "name": route[1]}
        )

    async def _forward(
        self,
        link: UpstreamLink,
        message: Message,
        params: dict[str, Any] | None,
        timeout: float | None = None,
    ) -> Message:
        request_id = message["id"]
        method = message["method"]
        era = self._note_era(params or {})
        ctx = None
        if self.pipeline.has(Phase.REQUEST) and params is not None:
            ctx = self._ctx(link.id, method, era)
            out = await self.pipeline.run(_REQUEST_PHASES, method, params, ctx)
            if out.stop is not None:
                return replies.stopped(request_id, out.stopped_by or "?", out.stop, link.id, None)
            params = out.payload
        try:
            reply = await self._request(link, method, params, request_id, timeout)
        except UpstreamError as exc:
            return replies.upstream_unavailable(request_id, exc)
        result = reply.get("result")
        if isinstance(result, dict) and self.pipeline.has(Phase.RESPONSE):
            ctx = ctx or self._ctx(link.id, method, era)
            out = await self.pipeline.run(_RESPONSE_PHASES, method, result, ctx)
            if out.stop is not None:
                return replies.stopped(request_id, out.stopped_by or "?", out.stop, link.id, None)
            return jsonrpc.result(request_id, out.payload)
        return {**reply, "id": request_id}

    # ---- catalog -----------------------------------------------------------------------------

    def _fetcher_for(self, link: UpstreamLink) -> Callable[[], Awaitable[UpstreamSnapshot | None]]:
        async def fetch() -> UpstreamSnapshot | None:
            return await self._fetch_snapshot(link)

        return fetch

    async def _refresh_all(self) -> None:
        await asyncio.gather(
            *(self.g.catalog.refresh(u) for u, link in self.links.items() if link.up),
            return_exceptions=True,
        )

    async def _fetch_snapshot(self, link: UpstreamLink) -> UpstreamSnapshot | None:
        """Read all of one upstream's lists (every page), in the session's era."""
        if not link.up or link.init_result is None:
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
            if not self._offers(link, kind.capability):
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
            params = self._own_params({"cursor": cursor} if cursor else None)
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

    # ---- shutdown ------------------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for upstream_id, fetcher in self._fetchers.items():
            self.g.catalog.clear_fetcher(upstream_id, fetcher)
        for task in list(self._inflight.values()) + list(self._background):
            task.cancel()
        await asyncio.gather(
            *(link.close() for link in self.links.values()), return_exceptions=True
        )
        for task in list(self._inflight.values()) + list(self._background):
            with contextlib.suppress(BaseException):
                await task


def _first_answer(request_id: RequestId, outcomes: list[Any]) -> Message:
    """The first upstream answer (with the client's id), or -32011 if none answered."""
    for outcome in outcomes:
        if isinstance(outcome, dict):
            return {**outcome, "id": request_id}
    return jsonrpc.error(
        request_id,
        errors.UPSTREAM_UNAVAILABLE,
        "no upstream is available",
        {"reason": "not_connected"},
    )


def _with_warnings(result: dict[str, Any], warnings: list[str], method: str) -> dict[str, Any]:
    """Show guard warnings to the model (a text block) and to tooling (_meta)."""
    result = dict(result)
    meta = dict(result.get("_meta") or {})
    meta["dev.mcpward/warnings"] = list(warnings)
    result["_meta"] = meta
    text = "\n".join(f"[mcpward warning] {w}" for w in warnings)
    if method == methods.TOOLS_CALL and isinstance(result.get("content"), list):
        result["content"] = [*result["content"], {"type": "text", "text": text}]
    return result


def _is_modern(message: Message) -> bool:
    params = message.get("params")
    return isinstance(params, dict) and message_era(params) is Era.MODERN


def _describe(outcome: object) -> str:
    if isinstance(outcome, dict) and isinstance(outcome.get("error"), dict):
        return f"error {outcome['error'].get('code')}"
    return str(outcome)
