"""The gateway's own error replies: denial -32013, hold -32010, upstream -32011, internal -32012."""

from __future__ import annotations

import logging
import secrets
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
    return jsonrpc.error(
        request_id,
        errors.UPSTREAM_UNAVAILABLE,
        f"upstream {exc.upstream!r} unavailable: {exc.reason.value}",
        {"upstream": exc.upstream, "reason": exc.reason.value},
    )


def internal(request_id: RequestId | None, where: str) -> Message:
    """Log the traceback under a fresh incident id; the client sees only the id."""
    incident = secrets.token_hex(6)
    log.exception("internal error %s while handling %s; failed closed", incident, where)
    return jsonrpc.error(
        request_id,
        errors.GATEWAY_INTERNAL,
        f"internal error in mcpward (incident {incident}); failed closed",
        {"incident": incident},
    )


def invalid_params(request_id: RequestId, message: str) -> Message:
    return jsonrpc.error(request_id, errors.INVALID_PARAMS, message)
