"""What the fuzzer expects of the gateway: which answer a client frame must get, whether a frame the
gateway sent is valid JSON-RPC, and whether it carries a planted credential.

Pure functions over bytes and parsed values; no processes here.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

IdKey = tuple[str, Any]
NULL: IdKey = ("null", None)
# Frames deeper than this may be refused by one parser and read by another (orjson stops at 1024).
SAFE_DEPTH = 500
INT64 = 2**63
PARSE_DEPTH = 5000

# What the fuzzer plants (tests/fuzz/strategies.py) and looks for in everything the client receives.
PLANTED = re.compile(rb"AKIA[A-Z0-9]{16}|ghp_[A-Za-z0-9]{36}")
PLANTED_TEXT = re.compile(r"AKIA[A-Z0-9]{16}|ghp_[A-Za-z0-9]{36}")


def id_key(value: object) -> IdKey:
    """A hashable key that tells 1 from "1", 1.0 and true."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return ("other", json.dumps(value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    return ("other", json.dumps(value, sort_keys=True, default=repr))


def valid_id(value: object) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Slot:
    """The answer one frame may get: its id is one of `accept`; `required`: it must come."""

    accept: frozenset[IdKey]
    required: bool
    why: str

    def describe(self) -> str:
        ids = ", ".join(sorted(repr(key[1]) for key in self.accept))
        need = "exactly one answer" if self.required else "at most one answer"
        return f"{need} with id in {{{ids}}} ({self.why})"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard constant {name}")


def lenient_parse(frame: bytes) -> tuple[bool, Any]:
    """(True, value) if some reasonable JSON parser reads the frame (BOM, surrogates allowed,
    deeper than Python's default recursion limit: orjson reads 1,024 levels)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, PARSE_DEPTH))
    try:
        return True, json.loads(frame, parse_constant=_reject_constant)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return False, None
    finally:
        sys.setrecursionlimit(limit)


def strings_of(value: Any) -> Iterator[str]:
    """Every string in a parsed value, keys included (iterative: values may be deep)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def depth_of(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def has_lone_surrogate(value: Any) -> bool:
    return any(
        any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
        for text in strings_of(value)
        if not text.isascii()
    )


def unambiguous(frame: bytes, value: Any) -> bool:
    """Every sensible parser reads this frame the same way (strict UTF-8, no BOM, no lone
    surrogate, not too deep); otherwise a parse error with id null is an acceptable answer too."""
    try:
        frame.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if frame.lstrip().startswith(b"\xef\xbb\xbf"):
        return False
    return not has_lone_surrogate(value) and depth_of(value) <= SAFE_DEPTH


def client_slot(frame: bytes, max_frame_bytes: int, *, http: bool = False) -> Slot | None:
    """The answer the gateway owes a client frame (None: it must not answer at all). On stdio a
    blank line is no frame; over HTTP a blank body is one that cannot be read."""
    if not frame.strip():
        return Slot(frozenset({NULL}), True, "an empty body") if http else None
    readable, value = lenient_parse(frame)
    own: IdKey | None = None
    if readable and isinstance(value, dict) and valid_id(value.get("id")):
        own = id_key(value["id"])
    if len(frame) > max_frame_bytes:
        # Its own top-level id may be answered (read safely); an id found elsewhere may not.
        # The gateway answers only a frame it knows is a request from its head and tail
        # (docs/errors.md): a notification, or a request whose members it cannot see, is dropped.
        accept = {NULL, own} if own is not None else {NULL}
        is_request = readable and isinstance(value, dict) and "method" in value and own is not None
        return Slot(frozenset(accept), False, "over the size cap" + (" (a request)" * is_request))
    if not readable:
        return Slot(frozenset({NULL}), True, "not readable JSON")
    if not isinstance(value, dict):
        return Slot(frozenset({NULL}), True, "not a JSON object (a batch or a scalar)")
    clean = unambiguous(frame, value)
    envelope = (
        value.get("jsonrpc") == "2.0"
        and ("params" not in value or isinstance(value["params"], dict))
        and len(value) == len({*value} & {"jsonrpc", "id", "method", "params"})
    )
    if "method" in value:
        method = value["method"]
        envelope = envelope and isinstance(method, str) and bool(method)
        if "id" not in value:
            if envelope and clean:
                return None
            return Slot(frozenset({NULL}), False, "a malformed notification")
        rid = value["id"]
        if own is not None:
            exact = envelope and clean and not (isinstance(rid, int) and abs(rid) >= INT64)
            accept = {own} if exact else {own, NULL}
            return Slot(frozenset(accept), True, "a request" if exact else "a malformed request")
        accept = {NULL}
        if isinstance(rid, float) and rid.is_integer():
            accept.add(id_key(int(rid)))
        return Slot(frozenset(accept), True, "a request whose id is not a string or integer")
    accept = {NULL} | ({own} if own is not None else set())
    if "result" in value or "error" in value:
        return Slot(frozenset(accept), False, "a response to a request never sent")
    return Slot(frozenset(accept), True, "neither request, notification nor response")


def message_problems(value: Any) -> list[str]:
    """What makes a parsed frame the gateway sent invalid JSON-RPC 2.0 / MCP (empty: valid)."""
    if not isinstance(value, dict):
        return [f"a {type(value).__name__} instead of a JSON object"]
    problems = []
    if value.get("jsonrpc") != "2.0":
        problems.append(f"jsonrpc is {value.get('jsonrpc')!r}")
    if "method" in value:
        if not isinstance(value["method"], str) or not value["method"]:
            problems.append("method is not a non-empty string")
        if "params" in value and not isinstance(value["params"], dict):
            problems.append("params is not an object")
        if "id" in value and not valid_id(value["id"]):
            problems.append(f"a request id of type {type(value['id']).__name__}")
        if "result" in value or "error" in value:
            problems.append("a request or notification carrying result or error")
        return problems
    if "id" not in value:
        problems.append("an answer without id")
    elif value["id"] is not None and not valid_id(value["id"]):
        problems.append(f"an answer id of type {type(value['id']).__name__}")
    if ("result" in value) == ("error" in value):
        problems.append("an answer with both or neither of result and error")
    elif "result" in value and not isinstance(value["result"], dict):
        problems.append(f"a result of type {type(value['result']).__name__}")
    elif "error" in value:
        error = value["error"]
        if not isinstance(error, dict):
            problems.append(f"an error of type {type(error).__name__}")
        else:
            code = error.get("code")
            if not isinstance(code, int) or isinstance(code, bool):
                problems.append(f"an error code of type {type(code).__name__}")
            if not isinstance(error.get("message"), str):
                problems.append("an error message that is not a string")
    return problems


def read_sent(line: bytes) -> tuple[Any, list[str]]:
    """Parse one line the gateway sent; (value, problems). Problems include invalid UTF-8/JSON."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, ["a frame that is not UTF-8"]
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return None, [f"a frame that is not JSON ({str(exc)[:80]})"]
    return value, message_problems(value)


def leaked_credentials(raw: bytes, value: Any) -> list[str]:
    """Planted credentials found in the raw bytes or in any decoded string of a received frame."""
    found = {match.decode() for match in PLANTED.findall(raw)}
    if value is not None:
        for text in strings_of(value):
            found.update(PLANTED_TEXT.findall(text))
    return sorted(found)


def is_answer(value: Any) -> bool:
    return isinstance(value, dict) and "method" not in value and "id" in value


def error_code(value: Any) -> Any:
    error = value.get("error") if isinstance(value, dict) else None
    return error.get("code") if isinstance(error, dict) else None
