"""What the first bytes of a frame too large to parse say about it: its top-level "id", and
whether it is a request. A small string-aware scanner; nested members never count.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

HEAD_BYTES = 4096

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(rb"[^,}\]\s]+")
_INTEGER = re.compile(rb"-?(?:0|[1-9][0-9]*)")
_WS = b" \t\r\n"
# The last member of the top-level object, if it is "id" (the frame's final "}").
_TAIL_ID = re.compile(
    rb'[,{][ \t\r]*"id"[ \t\r]*:[ \t\r]*(-?[0-9]+|"[^"\\]*")[ \t\r]*}[ \t\r\n]*\Z'
)


@dataclass(frozen=True, slots=True)
class HeadPeek:
    """`request_id`: the top-level "id" if the frame is a request (a top-level "method" string
    was seen) and the id could be read exactly; else None. Never the id of a notification."""

    request_id: str | int | None = None
    top_level_id: str | int | None = None  # any top-level "id" (a response's, too)
    has_method: bool = False


def _skip_ws(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in _WS:
        i += 1
    return i


def _value_end(data: bytes, i: int) -> int | None:
    """The index just after the JSON value that starts at `i`, or None if it is cut off."""
    first = data[i]
    if first == 0x22:  # "
        match = _STRING.match(data, i)
        return match.end() if match else None
    if first in b"{[":
        depth, j = 0, i
        while j < len(data):
            c = data[j]
            if c == 0x22:
                match = _STRING.match(data, j)
                if match is None:
                    return None
                j = match.end()
                continue
            if c in b"{[":
                depth += 1
            elif c in b"}]":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None
    match = _SCALAR.match(data, i)
    if match is None or match.end() >= len(data):
        return None  # a number that may go on past the head is not read
    return match.end()


def _decode_id(token: bytes) -> str | int | None:
    if token.startswith(b'"'):
        try:
            text = json.loads(token)
            text.encode("utf-8")  # a lone surrogate (an escape JSON allows) is not an id we echo
        except ValueError:
            return None
        return text if isinstance(text, str) else None
    if _INTEGER.fullmatch(token):
        return int(token)
    return None  # a float, a bool, null or a container: no id to answer with


def _key(token: bytes) -> str | None:
    try:
        key = json.loads(token)
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def peek_head(head: bytes, tail: bytes = b"") -> HeadPeek:
    """Read the top-level members of an object frame from its first bytes (`head`), and the
    "id" from its last bytes (`tail`) if the head ends before it."""
    head = head[:HEAD_BYTES]
    i = _skip_ws(head, 0)
    if i >= len(head) or head[i] != 0x7B:  # {
        return HeadPeek()
    i += 1
    ids: list[bytes] = []
    has_method = complete = False
    while True:
        i = _skip_ws(head, i)
        if i >= len(head):
            break
        if head[i] == 0x7D:  # }
            complete = True
            break
        match = _STRING.match(head, i) if head[i] == 0x22 else None
        if match is None:
            return HeadPeek()  # not JSON: nothing in it is trusted
        key = _key(match.group())
        i = _skip_ws(head, match.end())
        if i >= len(head):
            break
        if head[i] != 0x3A:  # :
            return HeadPeek()
        i = _skip_ws(head, i + 1)
        if i >= len(head):
            break
        if key == "method" and head[i] == 0x22:
            has_method = True
        end = _value_end(head, i)
        if end is None:
            break
        if key == "id":
            ids.append(head[i:end])
        i = _skip_ws(head, end)
        if i < len(head) and head[i] == 0x2C:  # ,
            i += 1
        elif i < len(head) and head[i] != 0x7D:
            return HeadPeek()
    if not complete and not ids and tail:
        found = _TAIL_ID.search(tail)
        if found is not None:
            ids.append(found.group(1))
    if len(ids) != 1:
        return HeadPeek(has_method=has_method)  # none, or a duplicate: which one counts is unclear
    top_level_id = _decode_id(ids[0])
    return HeadPeek(
        request_id=top_level_id if has_method else None,
        top_level_id=top_level_id,
        has_method=has_method,
    )
