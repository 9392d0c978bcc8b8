"""The gateway's own error replies: denial -32013 (an unknown tool or prompt -32602), hold -32010,
upstream -32011, internal -32012."""

from __future__ import annotations

import logging
import secrets
import sys
from typing import Any

from mcpward.pipeline.decisions import Deny, Hold
from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay.links import UpstreamError

log = logging.getLogger("mcpward.relay")


def denied(request_id: RequestId, guard_id: str, deny: Deny) -> Message:
    data: dict[str, Any] = {"guard": guard_id, "code": deny.code, "message": deny.message}
    if deny.details:
        data["details"] = deny.details
    if deny.unknown_item:  # what the server itself would answer; the gateway's reason in data
        return jsonrpc.error(request_id, errors.INVALID_PARAMS, deny.message, data)
    return jsonrpc.error(
        request_id, errors.DENIED, f"denied by guard {guard_id}: {deny.message}", data
    )


def held(
    request_id: RequestId, guard_id: str, hold: Hold, upstream: str, name: str | None
) -> Message:
    data: dict[str, Any] = {
        "upstream": upstream,
        "tool": name,
        "guard": guard_id,
        "code": hold.code,
    }
    data.update(hold.details)
    return jsonrpc.error(request_id, errors.HOLD, hold.message, data)


def stopped(
    request_id: RequestId, guard_id: str, stop: Deny | Hold, upstream: str, name: str | None
) -> Message:
    if isinstance(stop, Hold):
        return held(request_id, guard_id, stop, upstream, name)
    return denied(request_id, guard_id, stop)


def upstream_unavailable(request_id: RequestId, exc: UpstreamError) -> Message:
    data: dict[str, Any] = {"upstream": exc.upstream, "reason": exc.reason.value}
    message = f"upstream {exc.upstream!r} unavailable: {exc.reason.value}"
    if exc.problem:  # e.g. its command is missing: name it and the OS error
        data["problem"] = exc.problem
        message += f": {exc.problem}"
    return jsonrpc.error(request_id, errors.UPSTREAM_UNAVAILABLE, message, data)


def internal(request_id: RequestId | None, where: str) -> Message:
    """Call from an `except` block. Logs one error line (incident id, exception type) and the
    traceback at debug only (its frames may hold what a peer sent); the client sees only the id.
    """
    incident = secrets.token_hex(6)
    exc = sys.exc_info()[1]
    what = type(exc).__name__ if exc is not None else "error"
    log.error("internal error %s (%s) while handling %s; failed closed", incident, what, where)
    log.debug("internal error %s", incident, exc_info=exc is not None)
    return jsonrpc.error(
        request_id,
        errors.GATEWAY_INTERNAL,
        f"internal error in mcpward (incident {incident}); failed closed",
        {"incident": incident},
    )


def incident_of(reply: Message) -> str | None:
    """The incident id of a reply made by `internal` (None for any other reply)."""
    error = reply.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    incident = data.get("incident") if isinstance(data, dict) else None
    return incident if isinstance(incident, str) else None


def invalid_params(request_id: RequestId, message: str) -> Message:
    return jsonrpc.error(request_id, errors.INVALID_PARAMS, message)
