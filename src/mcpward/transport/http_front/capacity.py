"""The front's refusal when a cap is reached (sessions, or upstream processes): HTTP 503 with
`Retry-After` and a JSON-RPC -32011 error whose reason is `capacity`; nothing else is revealed.
"""

from __future__ import annotations

from typing import Any

from mcpward.protocol import errors, jsonrpc
from mcpward.protocol.errors import UpstreamFailure
from mcpward.transport.http_front.responses import Send, send_json

RETRY_AFTER_S = 5


async def refuse_for_capacity(send: Send, request_id: Any) -> None:
    body = jsonrpc.error(
        request_id if isinstance(request_id, (str, int)) else None,
        errors.UPSTREAM_UNAVAILABLE,
        "the gateway is at capacity; retry later",
        {"reason": UpstreamFailure.CAPACITY.value},
    )
    await send_json(send, 503, body, [(b"retry-after", str(RETRY_AFTER_S).encode())])
