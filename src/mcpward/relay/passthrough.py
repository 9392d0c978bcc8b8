"""Requests that are routed but not judged as calls: resource subscriptions, completions,
logging levels fanned out, subscriptions/listen, and methods the gateway does not know.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from mcpward.pipeline.phases import Phase
from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay import replies
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.relay.routing import Routes
from mcpward.relay.state import SessionState
from mcpward.relay.unrelayed import REFUSAL, is_unrelayed_method
from mcpward.relay.upstream_calls import UpstreamCalls

_REQUEST_PHASES = (Phase.REQUEST,)
_RESPONSE_PHASES = (Phase.RESPONSE,)


class Passthrough:
    """Routes the session's other requests; the request and response phases still apply."""

    def __init__(self, state: SessionState, calls: UpstreamCalls, routes: Routes) -> None:
        self.state = state
        self.calls = calls
        self.routes = routes

    async def resource_op(self, message: Message) -> Message:
        """resources/subscribe and resources/unsubscribe: to the upstream serving the URI."""
        params = message.get("params") or {}
        uri = params.get("uri")
        if not isinstance(uri, str):
            return replies.invalid_params(
                message["id"], f"{message['method']} needs a string 'uri'"
            )
        upstream = self.routes.uri(uri)
        if upstream is None:
            return replies.invalid_params(message["id"], f"Resource not found: {uri}")
        return await self.forward(self.state.links[upstream], message, params)

    async def complete(self, message: Message) -> Message:
        params = message.get("params") or {}
        raw_ref = params.get("ref")
        ref: dict[str, Any] = raw_ref if isinstance(raw_ref, dict) else {}
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            route = self.routes.name(ref["name"])
            if route is None:
                return replies.invalid_params(message["id"], f"Unknown prompt: {ref['name']}")
            params = {**params, "ref": {**ref, "name": route[1]}}
            return await self.forward(self.state.links[route[0]], message, params)
        uri = ref.get("uri")
        upstream = self.routes.uri(uri) if isinstance(uri, str) else None
        if upstream is None:
            return replies.invalid_params(message["id"], "completion/complete: unknown reference")
        return await self.forward(self.state.links[upstream], message, params)

    async def fan_out(self, message: Message) -> Message:
        """Send to every live upstream (logging/setLevel); answer with the first success."""
        params = message.get("params")
        era = self.state.note_era(params or {})
        live = [link for link in self.state.links.values() if link.up]
        outcomes = await asyncio.gather(
            *(self.calls.request(link, message["method"], params, message["id"]) for link in live),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, dict) and isinstance(outcome.get("result"), dict):
                return self.state.finish(message["id"], outcome["result"], era)
        return first_answer(message["id"], outcomes)

    async def listen(self, message: Message) -> Message:
        """subscriptions/listen: held open on every upstream until the client cancels it."""
        params = message.get("params")
        self.state.note_era(params or {})
        live = list(self.state.links.values())
        if not self.state.ns.enabled:
            return await self.forward(live[0], message, params, timeout=math.inf)
        outcomes = await asyncio.gather(
            *(
                self.calls.request(link, message["method"], params, message["id"], math.inf)
                for link in live
            ),
            return_exceptions=True,
        )
        return first_answer(message["id"], outcomes)

    async def other(self, message: Message) -> Message:
        """Methods the gateway does not know: passed through untouched (one upstream) or by name."""
        if is_unrelayed_method(message["method"]):
            return jsonrpc.error(message["id"], errors.METHOD_NOT_FOUND, REFUSAL)
        params = message.get("params")
        state = self.state
        if not state.ns.enabled:
            return await self.forward(next(iter(state.links.values())), message, params)
        name = (params or {}).get("name")
        route = self.routes.name(name) if isinstance(name, str) else None
        if route is None:
            return jsonrpc.error(
                message["id"],
                errors.METHOD_NOT_FOUND,
                f"method {message['method']!r} cannot be routed across {len(state.links)} "
                "upstreams",
            )
        return await self.forward(
            state.links[route[0]], message, {**(params or {}), "name": route[1]}
        )

    async def forward(
        self,
        link: UpstreamLink,
        message: Message,
        params: dict[str, Any] | None,
        timeout: float | None = None,
    ) -> Message:
        state = self.state
        pipeline = state.pipeline
        request_id = message["id"]
        method = message["method"]
        era = state.note_era(params or {})
        ctx = None
        if pipeline.has(Phase.REQUEST) and params is not None:
            ctx = state.ctx(link.id, method, era)
            out = await pipeline.run(_REQUEST_PHASES, method, params, ctx)
            if out.stop is not None:
                return replies.stopped(request_id, out.stopped_by or "?", out.stop, link.id, None)
            params = out.payload
        try:
            reply = await self.calls.request(link, method, params, request_id, timeout)
        except UpstreamError as exc:
            return replies.upstream_unavailable(request_id, exc)
        result = reply.get("result")
        if isinstance(result, dict) and pipeline.has(Phase.RESPONSE):
            ctx = ctx or state.ctx(link.id, method, era)
            out = await pipeline.run(_RESPONSE_PHASES, method, result, ctx)
            if out.stop is not None:
                return replies.stopped(request_id, out.stopped_by or "?", out.stop, link.id, None)
            return jsonrpc.result(request_id, out.payload)
        return {**reply, "id": request_id}


def first_answer(request_id: RequestId, outcomes: list[Any]) -> Message:
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
