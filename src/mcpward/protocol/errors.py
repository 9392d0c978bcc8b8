"""JSON-RPC error codes: the standard ones, MCP 2026-07-28's, and the gateway's own (-32010..13).

Also the closed vocabulary of reasons an upstream is unusable.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# MCP 2026-07-28
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# mcpward's own (see docs/errors.md)
HOLD = -32010
UPSTREAM_UNAVAILABLE = -32011
GATEWAY_INTERNAL = -32012
DENIED = -32013


class UpstreamFailure(str, Enum):
    """Why an upstream could not answer (data.reason of -32011); closed vocabulary."""

    NOT_CONNECTED = "not_connected"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    FRAME_TOO_LARGE = "frame_too_large"
    UNPARSEABLE = "unparseable"
    INVALID_ANSWER = "invalid_answer"  # an answer that is not valid JSON-RPC 2.0 / MCP
    RESTARTING = "restarting"
    SHUTTING_DOWN = "shutting_down"
    CAPACITY = "capacity"  # a cap on upstream processes is reached; retry later
    NOT_READING = "not_reading"  # it stopped reading what we send: its send queue is full or stuck


# Set by our own upstream connectors on an error they make up (an upstream that could not be
# reached), so the relay keeps its gateway code: the value is a Python object, which no parsed JSON
# can be, so an upstream cannot claim it (relay/foreign_codes.py re-codes every other one).
MADE_BY_GATEWAY_KEY = "__mcpward_made__"
MADE_BY_GATEWAY = object()


def made_by_gateway(message: dict[str, Any]) -> dict[str, Any]:
    """Mark an error a connector makes up itself, so it keeps the gateway's code."""
    message[MADE_BY_GATEWAY_KEY] = MADE_BY_GATEWAY
    return message
