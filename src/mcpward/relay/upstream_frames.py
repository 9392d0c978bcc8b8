"""What an upstream may send, checked before anything reads a field of it.

`protocol.jsonrpc.classify` checks the JSON-RPC 2.0 envelope; this adds the MCP shapes the relay
relies on: an answer's `result` is an object whose `_meta`, unless absent or null, is an object;
an error has an integer `code` (not a boolean) and a string `message`; a progress token or a
cancelled request id is a string or an integer. Each check returns a short fixed text naming
the problem (safe to log: never a value from the frame), or None if the frame is fine.
"""

from __future__ import annotations

from typing import Any

from mcpward.protocol import jsonrpc, methods
from mcpward.protocol.jsonrpc import Frame, FrameError, FrameKind


def _is_id(value: object) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _meta_problem(container: dict[str, Any], where: str) -> str | None:
    meta = container.get("_meta")
    if meta is None:  # absent, or null (sloppy but harmless: read as absent)
        return None
    if not isinstance(meta, dict):
        return f"{where} _meta is not an object"
    if "progressToken" in meta and not _is_id(meta["progressToken"]):
        return f"{where} _meta.progressToken is not a string or an integer"
    return None


def answer_problem(message: dict[str, Any]) -> str | None:
    """Why this response or error frame is not a valid MCP answer (None: it is)."""
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            return "error is not an object"
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            return "error.code is not an integer"
        if not isinstance(error.get("message"), str):
            return "error.message is not a string"
        return None
    result = message.get("result")
    if not isinstance(result, dict):
        return "result is not an object"
    return _meta_problem(result, "result")


def inbound_problem(frame: Frame) -> str | None:
    """Why this request or notification from an upstream cannot be relayed (None: it can)."""
    params = frame.message.get("params")
    if params is None:
        return None
    if not isinstance(params, dict):  # classify refuses this too; kept for a lenient parser
        return "params is not an object"
    problem = _meta_problem(params, "params")
    if problem is not None:
        return problem
    if frame.kind is FrameKind.NOTIFICATION:
        method = frame.method
        if method == methods.PROGRESS and not _is_id(params.get("progressToken")):
            return "progressToken is not a string or an integer"
        if (
            method == methods.CANCELLED
            and "requestId" in params
            and not _is_id(params["requestId"])
        ):
            return "requestId is not a string or an integer"
    return None


def check(message: object) -> tuple[Frame | None, str | None]:
    """Classify one upstream frame: (frame, None) if it is usable, else (frame or None, problem).

    The frame is returned with a problem when its envelope is fine but its MCP shape is not."""
    try:
        frame = jsonrpc.classify(message)
    except FrameError as exc:
        return None, exc.message
    if frame.kind in (FrameKind.RESPONSE, FrameKind.ERROR):
        return frame, answer_problem(frame.message)
    return frame, inbound_problem(frame)
