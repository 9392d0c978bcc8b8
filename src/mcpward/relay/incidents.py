"""An internal failure of a judged decision (a call or a list) still leaves its receipt.

The client gets -32012 with an incident id (relay/replies.py); the receipt says `error_code`
-32012 and `error_reason` `incident_<id>`, so the ledger and the log meet on one id.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from mcpward.evidence.record import DecisionRecord
from mcpward.protocol import errors
from mcpward.protocol.jsonrpc import Message
from mcpward.relay import replies
from mcpward.relay.state import SessionState

log = logging.getLogger("mcpward.relay")

Record = Callable[[DecisionRecord], Awaitable[None]]


def record_of(message: Message, state: SessionState) -> DecisionRecord:
    """What is known of a request that failed before its own record was made."""
    params = message.get("params")
    name = params.get("name", params.get("uri")) if isinstance(params, dict) else None
    return DecisionRecord(
        started_at=time.time(),
        method=str(message.get("method")),
        upstream=None,
        name=name if isinstance(name, str) else None,
        decision="error",
        session_id=state.session_id,
        identity=state.identity,
    )


async def record_incident(
    record_fn: Record, record: DecisionRecord, reply: Message, t0: float
) -> Message:
    """Record `record` as the incident `reply` (made by replies.internal) names; return reply."""
    incident = replies.incident_of(reply) or "unknown"
    record.decision = "error"
    record.error_code = errors.GATEWAY_INTERNAL
    record.error_reason = f"incident_{incident}"
    record.gateway_ms = max(0.0, (time.perf_counter() - t0) * 1000.0 - (record.upstream_ms or 0.0))
    try:
        await record_fn(record)
    except Exception as first:
        # The payloads may be what failed (not JSON: a lone surrogate, a cycle): the receipt
        # is kept without their hashes rather than lost.
        record.arguments = None
        record.result = None
        try:
            await record_fn(record)
        except Exception as exc:
            log.error(
                "incident %s: its receipt could not be recorded (%s, then %s)",
                incident,
                type(first).__name__,
                type(exc).__name__,
            )
    return reply
