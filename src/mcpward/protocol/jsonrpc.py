"""JSON-RPC 2.0 frames: parse once into a plain dict, classify, and serialise.

orjson on the hot path; the standard library only for integers beyond 64 bits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

import orjson

JSONValue = Any
Message = dict[str, Any]
RequestId = str | int


class FrameKind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    ERROR = "error"


class FrameError(Exception):
    """A frame that is not valid JSON (-32700) or not a valid JSON-RPC message (-32600)."""

    def __init__(self, code: int, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


_LONG_DIGITS = re.compile(rb"\d{20}")


def loads(data: bytes | str) -> JSONValue:
    """Parse JSON text; raises ValueError on anything that is not strict JSON."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_DIGITS.search(raw) is None:
        return orjson.loads(raw)
    # orjson turns integers beyond 64 bits into floats; the standard library keeps them exactly.
    return json.loads(raw, parse_constant=_reject_constant)


def dumps(value: JSONValue) -> bytes:
    """Serialise compactly, keeping key order."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


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
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def classify(message: object) -> Frame:
    """Check the JSON-RPC envelope of an already parsed value and say what it is."""
    if not isinstance(message, dict):
        if isinstance(message, list):
            raise FrameError(-32600, "JSON-RPC batches are not supported by MCP")
        raise FrameError(-32600, "a JSON-RPC message must be a JSON object")
    raw_id = message.get("id")
    echo_id = raw_id if _valid_id(raw_id) else None
    if message.get("jsonrpc") != "2.0":
        raise FrameError(-32600, 'the "jsonrpc" member must be exactly "2.0"', echo_id)
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            raise FrameError(-32600, 'the "method" member must be a non-empty string', echo_id)
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise FrameError(-32600, 'MCP "params" must be a JSON object', echo_id)
        if "id" not in message:
            return Frame(FrameKind.NOTIFICATION, message)
        if not _valid_id(raw_id):
            raise FrameError(-32600, 'a request "id" must be a string or an integer')
        return Frame(FrameKind.REQUEST, message)
    if "result" in message and "error" not in message:
        if not _valid_id(raw_id):
            raise FrameError(-32600, 'a response "id" must be a string or an integer')
        if not isinstance(message["result"], dict):
            raise FrameError(-32600, 'an MCP "result" must be a JSON object', echo_id)
        return Frame(FrameKind.RESPONSE, message)
    if "error" in message and "result" not in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise FrameError(-32600, 'an "error" must be an object with an integer "code"', echo_id)
        if raw_id is not None and not _valid_id(raw_id):
            raise FrameError(-32600, 'an error "id" must be a string, an integer or null')
        return Frame(FrameKind.ERROR, message)
    raise FrameError(-32600, "not a request, notification, response or error", echo_id)


def parse_frame(data: bytes | str) -> Frame:
    """Parse and classify one frame; FrameError carries the JSON-RPC error to answer with."""
    try:
        value = loads(data)
    except (ValueError, RecursionError) as exc:
        raise FrameError(-32700, f"parse error: {_short(exc)}") from None
    return classify(value)


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
