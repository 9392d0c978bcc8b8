"""The judged call: tools/call, prompts/get and resources/read. The only code that forwards a
judged request to an upstream, and only after the contract that upstream connection serves now
has been read for the pin check (docs/contracts.md, "The one invariant").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcpward.evidence.record import DecisionRecord
from mcpward.pipeline.executor import Outcome
from mcpward.pipeline.phases import Phase
from mcpward.protocol import jsonrpc, methods
from mcpward.protocol.jsonrpc import Message
from mcpward.relay import incidents, replies
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.relay.live_contracts import ConnectionContracts
from mcpward.relay.outbound import judge_error, judge_input_required
from mcpward.relay.outcomes import decision_of
from mcpward.relay.routing import Routes
from mcpward.relay.state import SessionState
from mcpward.relay.traced import CallTracer, Handler
from mcpward.relay.unrelayed import without_task_augmentation
from mcpward.relay.upstream_calls import LinkOpener, UpstreamCalls

Record = Callable[[DecisionRecord], Awaitable[None]]
ContractsOf = Callable[[UpstreamLink], ConnectionContracts]

_REQUEST_PHASES = (Phase.REQUEST,)


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


class JudgedCalls:
    """Route, read the connection's contracts, judge, forward, judge the result, record."""

    def __init__(
        self,
        state: SessionState,
        calls: UpstreamCalls,
        routes: Routes,
        open_link: LinkOpener,
        contracts_of: ContractsOf,
        refresh_all: Callable[[], Awaitable[None]],
        record: Record,
        tracer: CallTracer | None = None,
    ) -> None:
        self.state = state
        self.calls = calls
        self.routes = routes
        self.open_link = open_link
        self.contracts_of = contracts_of
        self.refresh_all = refresh_all
        self.record = record
        self.tracer = tracer
        # The entry the session calls: traced only when traces are configured.
        self.handle: Handler = self.judge
        if tracer is not None:
            self.record = tracer.recording(record)
            self.handle = tracer.calls(self.judge)

    async def judge(self, message: Message) -> Message:
        """Judge one call. Every decision leaves a receipt, an internal failure too: it is
        answered -32012 with an incident id, and its receipt names that incident."""
        opened: list[DecisionRecord] = []  # the call's record, once it has one
        t0 = time.perf_counter()
        try:
            return await self._judge(message, opened)
        except asyncio.CancelledError:
            raise
        except Exception:
            reply = replies.internal(message.get("id"), str(message.get("method")))
        record = opened[0] if opened else incidents.record_of(message, self.state)
        return await incidents.record_incident(self.record, record, reply, t0)

    async def _judge(self, message: Message, opened: list[DecisionRecord]) -> Message:
        state = self.state
        request_id = message["id"]
        method = message["method"]
        # no task augmentation: the upstream answers in this request, through the result guards
        params = without_task_augmentation(message.get("params") or {})
        started = time.time()
        t0 = time.perf_counter()
        call = CALL_KINDS[method]
        era = state.note_era(params)
        name = params.get(call.name_key)
        if not isinstance(name, str) or not name:
            return replies.invalid_params(request_id, f"{method} needs a string {call.name_key!r}")
        if call.name_key == "uri":
            upstream = self.routes.uri(name)
            if upstream is None:
                await self.refresh_all()
                upstream = self.routes.uri(name)
            if upstream is None:
                return replies.invalid_params(request_id, f"Resource not found: {name}")
            local = name
        else:
            route = self.routes.name(name)
            if route is None:
                what = "tool" if method == methods.TOOLS_CALL else "prompt"
                return replies.invalid_params(request_id, f"Unknown {what}: {name}")
            upstream, local = route
        if call.payload_key is None:
            payload: Any = params
        else:
            payload = params.get(call.payload_key)
            if payload is None:
                payload = {}
            elif not isinstance(payload, dict):
                return replies.invalid_params(request_id, f"{call.payload_key!r} must be an object")
        pipeline = state.pipeline
        record = DecisionRecord(
            started_at=started,
            method=method,
            upstream=upstream,
            name=local,
            decision="allow",
            session_id=state.session_id,
            era=era.value,
            identity=state.identity,
            arguments=payload,
        )
        opened.append(record)
        out = Outcome(payload=payload)
        refusal = state.services.refused.get(upstream)
        if refusal is not None:  # refused before start (server_allowlist): it never runs
            out.runs.append(refusal.run())
            out.stop, out.stopped_by = refusal.deny, refusal.guard_id
            reply = replies.stopped(request_id, refusal.guard_id, refusal.deny, upstream, local)
            return await self._close_record(record, out, reply, t0, None)
        link = state.links[upstream]
        contracts = self.contracts_of(link)
        if pipeline.reads_contracts:
            # The invariant: the connection this request will travel on is open, and what it
            # serves now has been read (once per connection and list_changed, shared by
            # concurrent callers) before any guard judges the request or it is forwarded.
            try:
                await self.open_link(link)
            except UpstreamError as exc:
                record.error_reason = exc.reason.value
                reply = replies.upstream_unavailable(request_id, exc)
                return await self._close_record(record, out, reply, t0, None)
            await contracts.current()
        ctx = state.ctx(upstream, method, era, contracts)
        if pipeline.has(Phase.REQUEST):
            out = await pipeline.run(_REQUEST_PHASES, method, params, ctx, out)
            if out.payload is not params:
                params = out.payload
                payload = params if call.payload_key is None else params.get(call.payload_key) or {}
            out.payload = payload
        if out.stop is None and pipeline.has(call.invoke_phase):
            out = await pipeline.run((call.invoke_phase,), local, payload, ctx, out)
            payload = out.payload
        record.arguments = payload
        if method == methods.TOOLS_CALL:
            snap = contracts.snapshot or state.services.catalog.snapshot(upstream)
            record.tool_definition = snap.tool(local) if snap is not None else None
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
        t_up = time.perf_counter()
        try:
            if self.tracer is None:
                reply = await self.calls.request(link, method, forward, request_id)
            else:
                request = self.calls.request(link, method, forward, request_id)
                reply = await self.tracer.round_trip(upstream, request)
        except UpstreamError as exc:
            record.error_reason = exc.reason.value
            return await self._close_record(
                record, out, replies.upstream_unavailable(request_id, exc), t0, None
            )
        upstream_ms = (time.perf_counter() - t_up) * 1000.0
        result = reply.get("result")
        if not isinstance(result, dict):
            answer: Message = {**reply, "id": request_id}
            if "error" in reply:  # judged like a result; the receipt records its runs
                answer = await judge_error(pipeline, answer, request_id, ctx, local, out)
            return await self._close_record(record, out, answer, t0, upstream_ms)
        if result.get("resultType") == "input_required":
            # MRTR: the retry is a new request and is judged again in full.
            answer = await judge_input_required(pipeline, result, request_id, ctx, local, out)
            return await self._close_record(record, out, answer, t0, upstream_ms)
        if pipeline.has(call.result_phase) or pipeline.has(Phase.RESPONSE):
            out = await pipeline.run((call.result_phase, Phase.RESPONSE), local, result, ctx, out)
            if out.stop is not None:
                reply = replies.stopped(
                    request_id, out.stopped_by or "?", out.stop, upstream, local
                )
                return await self._close_record(record, out, reply, t0, upstream_ms)
            result = out.payload
        if out.warnings:
            result = with_warnings(result, out.warnings, method)
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
        record.decision = decision_of(out, record.error_code)
        record.runs = out.runs
        record.stopped_by = out.stopped_by
        for run in out.runs:  # the pin gate says which contract the call was judged against
            contract = run.evidence.get("contract_hash") or run.evidence.get("new_hash")
            if isinstance(contract, str):
                record.contract_hash = contract
        record.upstream_ms = upstream_ms
        total = (time.perf_counter() - t0) * 1000.0
        record.gateway_ms = total - (upstream_ms or 0.0)
        await self.record(record)
        return reply


def with_warnings(result: dict[str, Any], warnings: list[str], method: str) -> dict[str, Any]:
    """Show guard warnings to the model (a text block) and to tooling (_meta).

    MCP's `_meta` is an object; the link refuses an answer whose `_meta` is not one
    (relay/upstream_frames.py), and should a guard leave one here it is replaced, not merged."""
    result = dict(result)
    old_meta = result.get("_meta")
    meta = dict(old_meta) if isinstance(old_meta, dict) else {}
    meta["dev.mcpward/warnings"] = list(warnings)
    result["_meta"] = meta
    text = "\n".join(f"[mcpward warning] {w}" for w in warnings)
    if method == methods.TOOLS_CALL and isinstance(result.get("content"), list):
        result["content"] = [*result["content"], {"type": "text", "text": text}]
    return result
