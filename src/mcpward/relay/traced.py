"""Spans of judged calls (only when traces are configured): one per call, a child per guard run
and per upstream round trip, whose W3C traceparent goes to HTTP upstreams. Attributes name the
upstream, method, a listed tool or prompt name and the decision; never arguments or results.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpward.evidence.record import DecisionRecord
from mcpward.protocol import methods
from mcpward.protocol.jsonrpc import Message
from mcpward.relay.links import UpstreamError
from mcpward.telemetry.labels import UNLISTED, safe_label
from mcpward.telemetry.propagation import TRACEPARENT
from mcpward.telemetry.tracing import Tracing

if TYPE_CHECKING:
    from opentelemetry.trace import Span

Handler = Callable[[Message], Coroutine[Any, Any, Message]]
Record = Callable[[DecisionRecord], Awaitable[None]]


@dataclass(slots=True)
class _Call:
    span: Span
    epoch_ns: int  # time.time_ns() when the call's span started
    perf_s: float  # time.perf_counter() at the same moment


_CURRENT: ContextVar[_Call | None] = ContextVar("mcpward_call_span", default=None)


class CallTracer:
    """Wraps the judged call's entry, its record callback and its upstream round trip."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing

    def calls(self, judge: Handler) -> Handler:
        tracing = self.tracing

        async def traced(message: Message) -> Message:
            method = str(message.get("method"))
            span = tracing.start(f"mcpward {method}", {"mcp.method.name": method})
            token = _CURRENT.set(_Call(span, time.time_ns(), time.perf_counter()))
            try:
                return await judge(message)
            except BaseException:
                tracing.error(span, "failed closed")
                raise
            finally:
                _CURRENT.reset(token)
                span.end()

        return traced

    def recording(self, record: Record) -> Record:
        async def traced(rec: DecisionRecord) -> None:
            call = _CURRENT.get()
            if call is not None:
                self._annotate(call, rec)
            await record(rec)

        return traced

    async def round_trip(self, upstream: str, request: Awaitable[dict[str, Any]]) -> Message:
        call = _CURRENT.get()
        if call is None:
            return await request
        tracing = self.tracing
        span = tracing.start("mcpward upstream", {"mcpward.upstream": upstream}, parent=call.span)
        token = TRACEPARENT.set(Tracing.traceparent(span))
        try:
            return await request
        except UpstreamError as exc:
            tracing.error(span, exc.reason.value)
            raise
        finally:
            TRACEPARENT.reset(token)
            span.end()

    def _annotate(self, call: _Call, rec: DecisionRecord) -> None:
        span = call.span
        attributes: dict[str, Any] = {
            "mcpward.upstream": rec.upstream or "",
            "mcpward.decision": rec.decision,
        }
        if rec.method in (methods.TOOLS_CALL, methods.PROMPTS_GET) and rec.name:
            listed = rec.method == methods.PROMPTS_GET or rec.tool_definition is not None
            attributes["mcpward.name"] = safe_label(rec.name) if listed else UNLISTED
        if rec.error_code is not None:
            attributes["rpc.jsonrpc.error_code"] = rec.error_code
        if rec.stopped_by:
            attributes["mcpward.stopped_by"] = rec.stopped_by
        span.set_attributes(attributes)
        for run in rec.runs:
            start = call.epoch_ns + int((run.started - call.perf_s) * 1e9)
            child = self.tracing.start(
                f"mcpward guard {run.guard_id}",
                {
                    "mcpward.guard.id": run.guard_id,
                    "mcpward.guard.kind": run.kind,
                    "mcpward.guard.phase": run.phase,
                    "mcpward.guard.outcome": run.outcome,
                    **({"mcpward.guard.code": safe_label(run.code)} if run.code else {}),
                },
                parent=span,
                start_ns=start,
            )
            child.end(end_time=start + int(run.duration_ms * 1e6))
