"""The front's 503 refusals, each with `Retry-After` and nothing else revealed: a cap is reached
(sessions, or upstream processes: JSON-RPC -32011, reason `capacity`), or the store that checks
credentials is away (-32012, reason `store_unavailable`).
"""

from __future__ import annotations

from typing import Any

from mcpward.fronts.http.responses import Send, send_json
from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.errors import UpstreamFailure

RETRY_AFTER_S = 5
STORE_RETRY_AFTER_S = 2  # the store's probe runs at least every 2 s
STORE_UNAVAILABLE = "store_unavailable"


async def refuse_for_capacity(send: Send, request_id: Any) -> None:
    body = jsonrpc.error(
        request_id if isinstance(request_id, (str, int)) else None,
        errors.UPSTREAM_UNAVAILABLE,
        "the gateway is at capacity; retry later",
        {"reason": UpstreamFailure.CAPACITY.value},
    )
    await send_json(send, 503, body, [(b"retry-after", str(RETRY_AFTER_S).encode())])


async def refuse_while_store_away(send: Send, description: str) -> None:
    body = jsonrpc.error(None, errors.GATEWAY_INTERNAL, description, {"reason": STORE_UNAVAILABLE})
    await send_json(send, 503, body, [(b"retry-after", str(STORE_RETRY_AFTER_S).encode())])
