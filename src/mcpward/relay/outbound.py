"""What an upstream sends the client outside a result - an error answering a request, a
notification, a request of its own (or, in 2026-07-28, the requests an `input_required` result
carries) - is judged here before it leaves (the `upstream_error` and
`upstream_message` phases): the one place for it, so no such text reaches the client unjudged.

A guard's change keeps the message's shape (secrets replace only the secret spans). A guard that
stops an error turns it into the gateway's own -32013/-32010; one that stops a notification or a
server request drops it (the upstream's request is refused), as does any failure to judge it.
"""

from __future__ import annotations

import logging
from typing import Any

from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.executor import Outcome, Pipeline
from mcpward.pipeline.phases import Phase
from mcpward.protocol import jsonrpc
from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay import replies
from mcpward.telemetry.log_limits import LimitedLog

log = logging.getLogger("mcpward.relay")

_ERROR_PHASES = (Phase.UPSTREAM_ERROR,)
_MESSAGE_PHASES = (Phase.UPSTREAM_MESSAGE,)
WARNINGS_META = "dev.mcpward/warnings"


async def judge_error(
    pipeline: Pipeline,
    reply: Message,
    request_id: RequestId,
    ctx: GuardContext,
    name: str | None = None,
    out: Outcome | None = None,
) -> Message:
    """`reply` (an error answer to the client's `request_id`) after the `upstream_error` guards:
    the same object when nothing changed, a redacted copy, or the gateway's denial. `out`: the
    call's outcome so far (a judged call's receipt records these runs too)."""
    if "error" not in reply or not pipeline.has(Phase.UPSTREAM_ERROR):
        return reply
    error = reply["error"]
    out = await pipeline.run(_ERROR_PHASES, ctx.method, error, ctx, out)
    if out.stop is not None:
        return replies.stopped(request_id, out.stopped_by or "?", out.stop, ctx.server_name, name)
    judged = out.payload
    if out.warnings:
        judged = error_with_warnings(judged, out.warnings)
    return reply if judged is error else {**reply, "error": judged}


def error_with_warnings(error: Any, warnings: list[str]) -> Any:
    """Guard warnings shown where a client shows an error: after its message."""
    if not isinstance(error, dict):
        return error
    text = "\n".join(f"[mcpward warning] {w}" for w in warnings)
    said = error.get("message")
    return {**error, "message": f"{said}\n{text}" if isinstance(said, str) else text}


async def judge_input_required(
    pipeline: Pipeline,
    result: dict[str, Any],
    request_id: RequestId,
    ctx: GuardContext,
    name: str | None,
    out: Outcome,
) -> Message:
    """The answer to a judged call whose result asks for input (2026-07-28): each request in its
    `inputRequests` (the era's elicitation, sampling, roots) judged at `upstream_message` like one
    the upstream sends on its own in the handshake era; a stop answers the call."""
    asks = result.get("inputRequests")
    if not isinstance(asks, dict) or not pipeline.has(Phase.UPSTREAM_MESSAGE):
        return jsonrpc.result(request_id, result)
    judged_asks = dict(asks)
    for key, ask in asks.items():
        if not isinstance(ask, dict) or "params" not in ask:
            continue
        method = ask.get("method")
        params = ask["params"]
        out = await pipeline.run(_MESSAGE_PHASES, str(method), params, ctx, out)
        if out.stop is not None:
            return replies.stopped(
                request_id, out.stopped_by or "?", out.stop, ctx.server_name, name
            )
        if out.payload is not params:
            judged_asks[key] = {**ask, "params": out.payload}
    if judged_asks != asks:
        result = {**result, "inputRequests": judged_asks}
    return jsonrpc.result(request_id, result)


async def judge_message(pipeline: Pipeline, message: Message, ctx: GuardContext) -> Message | None:
    """An upstream's notification or request (`message`) after the `upstream_message` guards:
    the same object when nothing changed, a copy with its params redacted, or None when a guard
    stopped it or judging it failed (drop it: never pass it unjudged)."""
    if "params" not in message or not pipeline.has(Phase.UPSTREAM_MESSAGE):
        return message
    params = message["params"]
    try:
        out = await pipeline.run(_MESSAGE_PHASES, ctx.method, params, ctx)
    except Exception as exc:  # fail closed: an unjudged message is a dropped one
        _dropped(ctx, f"judging failed ({type(exc).__name__})")
        return None
    if out.stop is not None:
        _dropped(ctx, f"stopped by guard {out.stopped_by}")
        return None
    judged = out.payload
    if out.warnings and isinstance(judged, dict):
        meta = judged.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta[WARNINGS_META] = list(out.warnings)
        judged = {**judged, "_meta": meta}
    return message if judged is params else {**message, "params": judged}


DROPS = LimitedLog(log)  # an upstream cannot flood the log with what it makes us drop


def _dropped(ctx: GuardContext, why: str) -> None:
    """A bounded number of log lines, however many an upstream makes the gateway drop."""
    DROPS.log(
        logging.WARNING,
        f"upstream {ctx.server_name}",
        "dropped",
        "upstream %s: %s dropped, %s",
        ctx.server_name,
        str(ctx.method)[:80],  # the upstream's own string: bounded in the log
        why,
    )
