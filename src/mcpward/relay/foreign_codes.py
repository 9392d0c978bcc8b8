"""An upstream's error never wears the gateway's own codes (-32010 HOLD ... -32013 denied).

A client, a UI or a person trusts those codes and their `data` (a hold's review and accept
commands) as the gateway's word, so an upstream that answers with one, by accident or to forge a
HOLD, gets its error re-coded as a plain server error with its own code and data kept apart.
"""

from __future__ import annotations

from typing import Any

from mcpward.protocol import errors
from mcpward.protocol.errors import MADE_BY_GATEWAY, MADE_BY_GATEWAY_KEY

GATEWAY_CODES = frozenset(
    {errors.HOLD, errors.UPSTREAM_UNAVAILABLE, errors.GATEWAY_INTERNAL, errors.DENIED}
)
UPSTREAM_SERVER_ERROR = -32000  # JSON-RPC's implementation-defined "server error"


def without_gateway_codes(message: dict[str, Any]) -> dict[str, Any]:
    """The upstream's response, re-coded if its error uses a code only the gateway may use."""
    if MADE_BY_GATEWAY_KEY in message:
        made = message.pop(MADE_BY_GATEWAY_KEY) is MADE_BY_GATEWAY
        if made:
            return message
    error = message.get("error")
    if not isinstance(error, dict) or error.get("code") not in GATEWAY_CODES:
        return message
    data: dict[str, Any] = {"upstream_code": error["code"]}
    if "data" in error:
        data["upstream_data"] = error["data"]
    text = error.get("message")
    said = f"upstream error: {text}" if isinstance(text, str) else "upstream error"
    recoded = {"code": UPSTREAM_SERVER_ERROR, "message": said, "data": data}
    return {**message, "error": recoded}
