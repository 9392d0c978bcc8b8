"""JSON-RPC 2.0 frames: parse once into a plain dict, classify, and serialise.

orjson decides what is valid JSON (strict UTF-8, no lone surrogates, no NaN or Infinity); the
standard library re-reads only a frame with integers beyond 64 bits, to keep them exact. Nesting
is capped at MAX_DEPTH on the way in, so every parsed value can be serialised on the way out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

import orjson

from mcpward.protocol import shapes

JSONValue = Any
Message = dict[str, Any]
RequestId = str | int

# Deepest nesting a frame may have (the top-level object is level 1). MCP messages need a few
# levels plus a tool's schema or arguments; orjson itself reads up to 1024 levels but writes only
# up to 254, so a deeper value would parse and then fail on its way out. docs/errors.md.
MAX_DEPTH = 128


class FrameKind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    ERROR = "error"


class FrameError(Exception):
    """A frame that is not valid JSON (-32700) or not a valid JSON-RPC message (-32600, or -32602
    for a request whose params have the wrong MCP shape).

    `notification` is True when the bad frame is a notification: it is dropped, never answered.
    """

    def __init__(
        self,
        code: int,
        message: str,
        request_id: RequestId | None = None,
        *,
        notification: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.notification = notification


class TooDeep(ValueError):
    """A JSON value nested deeper than MAX_DEPTH."""


class NotSerialisable(ValueError):
    """A value `dumps` cannot write as strict JSON (a lone surrogate, a non-JSON type, a cycle,
    nesting beyond what the serialiser takes). The only error `dumps` raises."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


# An integer orjson would turn into a float: beyond u64 (20 digits) or below i64 (19 digits).
_LONG_DIGITS = re.compile(rb"\d{19}")


def too_deep(value: JSONValue, limit: int = MAX_DEPTH) -> bool:
    """True if `value` nests containers deeper than `limit` levels (checked level by level)."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        deeper: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            deeper.extend(c for c in children if isinstance(c, (dict, list)))
        level = deeper
    return False


def _nests_too_deep(raw: bytes, value: JSONValue) -> bool:
    # Fewer brackets than levels allowed cannot nest too deep: most frames skip the walk.
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return False
    return too_deep(value)


def _parse(raw: bytes) -> JSONValue:
    # orjson is the one judge of validity, so both paths refuse the same frames.
    value = orjson.loads(raw)
    if _LONG_DIGITS.search(raw) is not None and not _nests_too_deep(raw, value):
        # orjson turns integers beyond 64 bits into floats; the standard library keeps them
        # exactly. The text is valid strict UTF-8 JSON here (orjson said so).
        value = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    return value


def loads(data: bytes | str) -> JSONValue:
    """Parse JSON text; raises ValueError (TooDeep beyond MAX_DEPTH) on anything that is not
    strict JSON: invalid UTF-8, lone surrogates, NaN/Infinity, a BOM, trailing data."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        value = _parse(raw)
    except RecursionError:
        raise ValueError("nesting too deep to parse") from None
    if _nests_too_deep(raw, value):
        raise TooDeep(f"nesting deeper than {MAX_DEPTH} levels")
    return value


def dumps(value: JSONValue) -> bytes:
    """Serialise compactly, keeping key order; raises NotSerialisable and nothing else."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        pass
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8")  # strict: a lone surrogate raises here
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        raise NotSerialisable(f"not serialisable as JSON: {type(exc).__name__}") from None


@dataclass(frozen=True, slots=True)
class Frame:
    """One parsed JSON-RPC message and its kind."""

    kind: FrameKind
    message: Message

    @property
    def id(self) -> RequestId | None:
        return self.message.get("id")

    @property
    def method(self) -> str | None:
        return self.message.get("method")

    @property
    def params(self) -> dict[str, Any]:
        params = self.message.get("params")
        return params if isinstance(params, dict) else {}


def _valid_id(value: object) -> bool:
    return shapes.is_id(value)


def classify(message: object) -> Frame:
    """Check the JSON-RPC envelope and the MCP shapes the gateway relies on, and say what it is.

    A bad request raises FrameError with its id (-32600 for the envelope, -32602 for params of
    the wrong shape); a bad notification raises FrameError with `notification=True` (drop it).
    """
    if not isinstance(message, dict):
        if isinstance(message, list):
            raise FrameError(-32600, "JSON-RPC batches are not supported by MCP")
        raise FrameError(-32600, "a JSON-RPC message must be a JSON object")
    raw_id = message.get("id")
    echo_id = raw_id if _valid_id(raw_id) else None
    if message.get("jsonrpc") != "2.0":
        raise FrameError(-32600, 'the "jsonrpc" member must be exactly "2.0"', echo_id)
    if "method" in message:
        return _classify_call(message, raw_id, echo_id)
    if "result" in message and "error" not in message:
        if not _valid_id(raw_id):
            raise FrameError(-32600, 'a response "id" must be a string or an integer')
        problem = shapes.result_problem(message["result"])
        if problem is not None:
            raise FrameError(-32600, problem, echo_id)
        return Frame(FrameKind.RESPONSE, message)
    if "error" in message and "result" not in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise FrameError(-32600, 'an "error" must be an object with an integer "code"', echo_id)
        if raw_id is not None and not _valid_id(raw_id):
            raise FrameError(-32600, 'an error "id" must be a string, an integer or null')
        return Frame(FrameKind.ERROR, message)
    raise FrameError(-32600, "not a request, notification, response or error", echo_id)


def _classify_call(message: Message, raw_id: object, echo_id: RequestId | None) -> Frame:
    """A request or a notification (the message has a "method" member)."""
    is_notification = "id" not in message
    method = message["method"]
    if not isinstance(method, str) or not method:
        raise FrameError(
            -32600,
            'the "method" member must be a non-empty string',
            echo_id,
            notification=is_notification,
        )
    params = message.get("params")
    if params is None and "params" in message:
        del message["params"]  # null reads as absent, and is forwarded so (JSON-RPC allows no null)
    if params is not None and not isinstance(params, dict):
        raise FrameError(
            -32600, 'MCP "params" must be a JSON object', echo_id, notification=is_notification
        )
    if is_notification:
        problem = shapes.notification_problem(method, params)
        if problem is not None:
            raise FrameError(-32600, problem, notification=True)
        return Frame(FrameKind.NOTIFICATION, message)
    if not _valid_id(raw_id):
        raise FrameError(-32600, 'a request "id" must be a string or an integer')
    problem = shapes.request_problem(method, params)
    if problem is not None:
        raise FrameError(-32602, problem, echo_id)
    return Frame(FrameKind.REQUEST, message)


def parse_value(data: bytes | str) -> JSONValue:
    """Parse one frame's JSON; FrameError (-32700, or -32600 with the id of a request nested
    deeper than MAX_DEPTH; `notification` set for such a notification) if the gateway refuses it."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        value = _parse(raw)
    except (ValueError, RecursionError) as exc:
        raise FrameError(-32700, f"parse error: {_short(exc)}") from None
    if _nests_too_deep(raw, value):
        # Valid JSON, but deeper than the gateway takes: refused like any invalid request.
        top = value if isinstance(value, dict) else {}
        request_id = top.get("id") if _valid_id(top.get("id")) else None
        is_notification = "id" not in top and isinstance(top.get("method"), str)
        raise FrameError(
            -32600,
            f"nesting deeper than {MAX_DEPTH} levels",
            request_id if "method" in top else None,
            notification=is_notification,
        )
    return value


def parse_frame(data: bytes | str) -> Frame:
    """Parse and classify one frame; FrameError carries the JSON-RPC error to answer with."""
    return classify(parse_value(data))


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


def request(request_id: RequestId, method: str, params: dict[str, Any] | None = None) -> Message:
    msg: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    msg: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(request_id: RequestId, value: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(
    request_id: RequestId | None, code: int, message: str, data: JSONValue | None = None
) -> Message:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}
