"""The MCP shapes the gateway relies on, checked at the edge before anything reads a frame.

Each check returns a short description of what is wrong, or None; `jsonrpc.classify` turns it
into the error to answer (a request) or a drop (a notification). See docs/errors.md.
"""

from __future__ import annotations

from typing import Any

from mcpward.protocol import methods
from mcpward.protocol.methods import CANCELLED, PROGRESS, RESOURCES_UPDATED

MESSAGE = "notifications/message"


def is_id(value: object) -> bool:
    """A JSON-RPC id the gateway accepts: a string or an integer (never a bool or a float)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _meta_problem(params: dict[str, Any]) -> str | None:
    if "_meta" not in params:
        return None
    meta = params["_meta"]
    if not isinstance(meta, dict):
        return '"params._meta" must be an object'
    if "progressToken" in meta and not is_id(meta["progressToken"]):
        return '"params._meta.progressToken" must be a string or an integer'
    return None


# request method -> (member of params that must be a string, member that must be an object if sent)
_REQUEST_PARAMS: dict[str, tuple[str, str | None]] = {
    methods.TOOLS_CALL: ("name", "arguments"),
    methods.PROMPTS_GET: ("name", "arguments"),
    methods.RESOURCES_READ: ("uri", None),
}  # not resources/(un)subscribe: 2026-07-28 removed them, and their answer is then -32601


def request_problem(method: str, params: dict[str, Any] | None) -> str | None:
    """What is wrong with a request's params (already known to be an object or absent)."""
    required = _REQUEST_PARAMS.get(method)
    if params is None:
        return f'"{method}" needs "params"' if required is not None else None
    problem = _meta_problem(params)
    if problem is not None or required is None:
        return problem
    text_member, object_member = required
    if not isinstance(params.get(text_member), str):
        return f'"params.{text_member}" of "{method}" must be a string'
    if object_member is not None and object_member in params:
        value = params[object_member]
        if value is not None and not isinstance(value, dict):
            return f'"params.{object_member}" of "{method}" must be an object'
    return None


# notification method -> member of params that must be a string
_NOTIFICATION_TEXT = {RESOURCES_UPDATED: "uri", MESSAGE: "level"}


def notification_problem(method: str, params: dict[str, Any] | None) -> str | None:
    """What is wrong with a notification's params (already known to be an object or absent).

    A request method sent without an id (a `tools/call` with its id left out) would reach the
    other side past every check of that request and be answered by nobody: it is dropped.
    Notifications of other names (a vendor's own) pass."""
    if method in methods.REQUESTS:
        return f'"{method}" is a request method sent without an id'
    if params is None:
        if method in (CANCELLED, PROGRESS, RESOURCES_UPDATED, MESSAGE):
            return f'"{method}" needs "params"'
        return None
    problem = _meta_problem(params)
    if problem is not None:
        return problem
    if method == CANCELLED:
        if "requestId" in params and not is_id(params["requestId"]):
            return '"params.requestId" must be a string or an integer'
        if "reason" in params and not isinstance(params["reason"], str):
            return '"params.reason" must be a string'
    elif method == PROGRESS:
        if not is_id(params.get("progressToken")):
            return '"params.progressToken" must be a string or an integer'
        if not _is_number(params.get("progress")):
            return '"params.progress" must be a number'
        if "total" in params and not _is_number(params["total"]):
            return '"params.total" must be a number'
        if "message" in params and not isinstance(params["message"], str):
            return '"params.message" must be a string'
    elif method in _NOTIFICATION_TEXT:
        member = _NOTIFICATION_TEXT[method]
        if not isinstance(params.get(member), str):
            return f'"params.{member}" must be a string'
    return None


def result_problem(result: object) -> str | None:
    """What is wrong with a response's result."""
    if not isinstance(result, dict):
        return 'an MCP "result" must be a JSON object'
    meta = result.get("_meta")
    if meta is not None and not isinstance(meta, dict):  # null reads as absent (sloppy, harmless)
        return '"result._meta" must be an object'
    return None
