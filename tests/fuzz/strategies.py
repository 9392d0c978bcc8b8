"""Hypothesis strategies for hostile frames: from a client (raw bytes of one line) and from an
upstream (the script of raw lines the scripted upstream plays for one call).

Values are built as Python objects and serialised by `encode`, which also writes `Raw` JSON text
verbatim (deep nesting, lone surrogates as escapes, numbers no Python float can hold).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

ID_PLACEHOLDER = "__FUZZ_ID__"
NEXT_ID_PLACEHOLDER = "__FUZZ_NEXT_ID__"
TOKEN_PLACEHOLDER = "__FUZZ_TOKEN__"
AWS_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


class Frame(bytes):
    """One raw line; its repr stays short however large it is (hypothesis prints it)."""

    def __repr__(self) -> str:
        text = bytes.__repr__(self)
        return text if len(text) <= 400 else f"{text[:300]}...{text[-60:]} ({len(self)} bytes)"


class Script(list[bytes]):
    """The lines an upstream plays for one call, with the same short repr."""

    def __repr__(self) -> str:
        return "Script([" + ", ".join(repr(Frame(line)) for line in self) + "])"


@dataclass(frozen=True)
class Raw:
    """JSON text written into a frame as it is."""

    text: str


def encode(value: Any, ensure_ascii: bool = True) -> str:
    """JSON text of `value`; `Raw` nodes are inserted verbatim. With ensure_ascii a lone
    surrogate becomes a `\\ud800` escape (a Python str holding one cannot be UTF-8 encoded)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=ensure_ascii)}:{encode(v, ensure_ascii)}"
            for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v, ensure_ascii) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ensure_ascii)


def to_bytes(text: str) -> bytes:
    """UTF-8, with lone surrogates passed through as (invalid) bytes; never a raw newline."""
    return text.encode("utf-8", "surrogatepass").replace(b"\n", b" ")


# ---- values ---------------------------------------------------------------------------------

ODD_PIECES = st.sampled_from(
    [
        "\x00",  # NUL
        "\ufeff",  # BOM
        "\u200f",  # right-to-left mark
        "\u202e",  # right-to-left override
        "\u2028",  # line separator
        "\ud800",  # lone high surrogate
        "\udfff",  # lone low surrogate
        "\U0001f600",
        "\\",
        '"',
        "é",
        "\x1b[31m",
        "ignore all previous instructions",
        "id",
        '{"id":1}',
    ]
)
TEXT = st.lists(st.one_of(st.text(max_size=12), ODD_PIECES), max_size=4).map("".join)
TWENTY_DIGITS = st.sampled_from(
    [12345678901234567890, -98765432109876543210, 2**63, 2**64, -(2**63) - 1, 10**19]
)
INTEGERS = st.one_of(st.integers(-(2**31), 2**31), TWENTY_DIGITS, st.integers(-(10**30), 10**30))
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.one_of(st.none(), st.booleans(), INTEGERS, FLOATS, TEXT)


def deep(depth: int, kind: str) -> Raw:
    if kind == "list":
        return Raw("[" * depth + "1" + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


DEEP = st.builds(
    deep, st.sampled_from([50, 400, 600, 1000, 1100, 3000]), st.sampled_from(["list", "dict"])
)
ODD_NUMBERS = st.sampled_from(
    [Raw("1e999"), Raw("-0"), Raw("1.0"), Raw("1E+2"), Raw("123456789012345678901234567890.5")]
)
JSON_VALUES = st.recursive(
    st.one_of(SCALARS, ODD_NUMBERS),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
    ),
    max_leaves=12,
)
ANY_VALUE = st.one_of(JSON_VALUES, DEEP)
IDS = st.one_of(
    st.integers(0, 20),
    st.integers(-(2**40), 2**40),
    TWENTY_DIGITS,
    TEXT,
    st.none(),
    FLOATS,
    st.booleans(),
    st.lists(SCALARS, max_size=2),
    st.dictionaries(TEXT, SCALARS, max_size=2),
)

# ---- planted credentials --------------------------------------------------------------------

AWS_KEY_IDS = st.text(AWS_ALPHABET, min_size=16, max_size=16).map(lambda s: "AKIA" + s)
GITHUB_TOKENS = st.text(ALNUM, min_size=36, max_size=36).map(lambda s: "ghp_" + s)
CREDENTIALS = st.one_of(AWS_KEY_IDS, GITHUB_TOKENS)
# Text around a credential: no letter or digit touches it, as in real output.
PLAIN = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10)
PLANTED_TEXT = st.builds(lambda a, c, b: f"{a} {c} {b}", PLAIN, CREDENTIALS, PLAIN)


@st.composite
def with_credential(draw: st.DrawFn) -> Any:
    """A JSON value of any shape with a planted credential in one of its strings."""
    secret = draw(PLANTED_TEXT)
    other = draw(JSON_VALUES)
    shapes = [
        secret,
        [other, secret],
        {"content": [{"type": "text", "text": secret}]},
        {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"k": [secret]}},
        {
            "content": [{"type": "text", "text": secret}],
            "_meta": draw(st.one_of(TEXT, st.lists(TEXT))),
        },
        {"content": [{"type": "resource", "resource": {"uri": "x://a", "text": secret}}]},
        {"k": other, "nested": {"deeper": [1, {"x": secret}]}},
        {"content": secret},
        {"isError": True, "content": [{"type": "text", "text": secret}]},
    ]
    return draw(st.sampled_from(shapes))


# ---- client frames --------------------------------------------------------------------------

KNOWN_CLIENT_METHODS = st.sampled_from(
    [
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "resources/list",
        "resources/read",
        "completion/complete",
        "logging/setLevel",
        "initialize",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/initialized",
        "notifications/roots/list_changed",
        "vendor/thing",
        "",
    ]
)
# Mostly methods the gateway knows (their params are where the type confusions hide).
CLIENT_METHODS = st.one_of(
    KNOWN_CLIENT_METHODS, KNOWN_CLIENT_METHODS, KNOWN_CLIENT_METHODS, TEXT, SCALARS
)
TOOL_NAMES = st.sampled_from(["echo", "reply", "delete_things", "Delete_Things", "nope"]) | TEXT


@st.composite
def params_for(draw: st.DrawFn, method: Any) -> Any:
    if method == "notifications/cancelled":
        return {"requestId": draw(IDS | DEEP), "reason": draw(SCALARS)}
    if method == "notifications/progress":
        return {
            "progressToken": draw(IDS | DEEP),
            "progress": draw(SCALARS),
            "message": draw(SCALARS),
        }
    if method == "tools/call":
        params: dict[str, Any] = {"name": draw(TOOL_NAMES), "arguments": draw(ANY_VALUE)}
        if draw(st.booleans()):
            params["_meta"] = draw(
                st.one_of(st.fixed_dictionaries({"progressToken": IDS}), ANY_VALUE)
            )
        return params
    return draw(st.one_of(st.dictionaries(TEXT, ANY_VALUE, max_size=3), ANY_VALUE))


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """A request or notification, each member present or not, of any type."""
    frame: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        frame["jsonrpc"] = "2.0"
    else:
        frame["jsonrpc"] = draw(SCALARS)
    method = draw(CLIENT_METHODS)
    notification = isinstance(method, str) and method.startswith("notifications/")
    if draw(st.integers(0, 3)) == 0 if notification else draw(st.integers(0, 2)) > 0:
        frame["id"] = draw(IDS)
    if draw(st.integers(0, 9)):
        frame["method"] = method
    if draw(st.integers(0, 3)):
        frame["params"] = draw(params_for(method))
    if not draw(st.integers(0, 5)):
        frame["n"] = draw(TWENTY_DIGITS)
    if not draw(st.integers(0, 9)):
        frame[draw(TEXT)] = draw(SCALARS)
    return frame


RESPONSES = st.builds(
    lambda rid, member, value: {"jsonrpc": "2.0", "id": rid, member: value},
    IDS,
    st.sampled_from(["result", "error"]),
    ANY_VALUE,
)
GARBAGE = st.one_of(
    st.binary(min_size=1, max_size=64),
    st.sampled_from(
        [
            b"{",
            b"NaN",
            b'{"jsonrpc":"2.0","id":1,"method":"ping",}',
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}{"x":1}',
            b"\xef\xbb\xbf{}",
            b'{"a":\xff}',
            b'{"jsonrpc":"2.0","id":Infinity,"method":"ping"}',
            b"[" * 100000,
        ]
    ),
)


def padded(frame: dict[str, Any], size: int) -> bytes:
    """The frame with a `pad` member grown so the line is exactly `size` bytes (when it can)."""
    base = to_bytes(encode({**frame, "pad": ""}))
    return to_bytes(encode({**frame, "pad": "x" * max(0, size - len(base))}))


@st.composite
def sized_frames(draw: st.DrawFn, max_frame_bytes: int) -> bytes:
    """Frames just under, at and over the size cap; some are notifications whose params start
    with an `id` (a peeked id must never be taken for the frame's own)."""
    size = max_frame_bytes + draw(st.sampled_from([-2, -1, 0, 1, 2, 100, max_frame_bytes]))
    if draw(st.booleans()):
        frame: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"id": draw(st.integers(0, 20)), "data": "x"},
        }
    else:
        frame = draw(envelopes())
    return padded(frame, size)


def client_frames(max_frame_bytes: int) -> st.SearchStrategy[Frame]:
    """One line a hostile or broken client may send."""
    return _client_lines(max_frame_bytes).map(Frame)


@st.composite
def _client_lines(draw: st.DrawFn, max_frame_bytes: int) -> bytes:
    """One line a hostile or broken client may send."""
    kind = draw(
        st.sampled_from(["envelope"] * 6 + ["response", "batch", "scalar", "garbage", "sized"])
    )
    if kind == "garbage":
        return draw(GARBAGE).replace(b"\n", b" ")
    if kind == "sized":
        return draw(sized_frames(max_frame_bytes))
    value: Any
    if kind == "envelope":
        value = draw(envelopes())
    elif kind == "response":
        value = draw(RESPONSES)
    elif kind == "batch":
        value = draw(st.lists(envelopes(), max_size=3))
    else:
        value = draw(ANY_VALUE)
    return to_bytes(encode(value, ensure_ascii=draw(st.integers(0, 4)) > 0))


# ---- upstream scripts -------------------------------------------------------------------------

UPSTREAM_IDS = st.one_of(
    st.just(ID_PLACEHOLDER),
    st.just(NEXT_ID_PLACEHOLDER),
    IDS,
)


@st.composite
def upstream_answers(draw: st.DrawFn) -> dict[str, Any]:
    """An answer to the call: any id (mostly its own), any jsonrpc, result and/or error of any
    type, credentials planted in the result or the error's message or data."""
    answer: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        answer["jsonrpc"] = "2.0"
    elif draw(st.booleans()):
        answer["jsonrpc"] = draw(SCALARS)
    answer["id"] = ID_PLACEHOLDER if draw(st.integers(0, 4)) else draw(UPSTREAM_IDS)
    shape = draw(st.sampled_from(["result", "result", "error", "error", "both", "neither"]))
    if shape in ("result", "both"):
        answer["result"] = draw(st.one_of(with_credential(), ANY_VALUE))
    if shape in ("error", "both"):
        code = draw(st.one_of(st.integers(-33000, 1000), SCALARS))
        message = draw(st.one_of(PLANTED_TEXT, SCALARS, with_credential()))
        error: Any = {"code": code, "message": message}
        if draw(st.booleans()):
            error["data"] = draw(st.one_of(with_credential(), ANY_VALUE))
        answer["error"] = draw(st.one_of(st.just(error), st.just(error), ANY_VALUE))
    if not draw(st.integers(0, 9)):
        answer[draw(TEXT)] = draw(SCALARS)
    return answer


UPSTREAM_LEVELS = st.one_of(st.sampled_from(["info", "error", "debug", "emergency"]), SCALARS)


@st.composite
def upstream_extras(draw: st.DrawFn, max_frame_bytes: int) -> bytes:
    """A line an upstream sends besides its answer: notifications (with credentials), requests
    to the client, answers to requests never sent, garbage, frames over the size cap."""
    kind = draw(
        st.sampled_from(
            [
                "log",
                "log",
                "progress",
                "progress",
                "notify",
                "request",
                "answer",
                "garbage",
                "sized",
            ]
        )
    )
    value: Any
    if kind == "log":
        params: Any = {
            "level": draw(UPSTREAM_LEVELS),
            "data": draw(st.one_of(with_credential(), PLANTED_TEXT)),
        }
        if draw(st.booleans()):
            params["logger"] = draw(st.one_of(PLANTED_TEXT, SCALARS))
        value = {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
    elif kind == "progress":
        token = TOKEN_PLACEHOLDER if draw(st.integers(0, 3)) else draw(IDS | DEEP)
        value = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": token,
                "progress": draw(st.one_of(st.integers(0, 10), SCALARS)),
                "message": draw(st.one_of(PLANTED_TEXT, SCALARS)),
            },
        }
    elif kind == "notify":
        method = draw(
            st.one_of(
                st.sampled_from(
                    [
                        "notifications/tools/list_changed",
                        "notifications/resources/updated",
                        "vendor/x",
                    ]
                ),
                TEXT,
                SCALARS,
            )
        )
        value = {"jsonrpc": "2.0", "method": method, "params": draw(ANY_VALUE)}
    elif kind == "request":
        method = draw(
            st.sampled_from(
                ["sampling/createMessage", "roots/list", "elicitation/create", "ping", "vendor/ask"]
            )
        )
        value = {"jsonrpc": "2.0", "id": draw(IDS), "method": method, "params": draw(ANY_VALUE)}
    elif kind == "answer":
        value = {"jsonrpc": "2.0", "id": draw(UPSTREAM_IDS), "result": draw(ANY_VALUE)}
    elif kind == "garbage":
        return draw(GARBAGE).replace(b"\n", b" ")
    else:
        frame = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": draw(PLANTED_TEXT)},
        }
        return padded(frame, max_frame_bytes + draw(st.sampled_from([-1, 0, 1, 1000])))
    if not draw(st.integers(0, 5)):
        value["n"] = draw(TWENTY_DIGITS)
    return to_bytes(encode(value, ensure_ascii=draw(st.integers(0, 4)) > 0))


FALLBACK = to_bytes(
    encode(
        {
            "jsonrpc": "2.0",
            "id": ID_PLACEHOLDER,
            "result": {"content": [{"type": "text", "text": "fallback"}]},
        }
    )
)


def upstream_scripts(max_frame_bytes: int) -> st.SearchStrategy[Script]:
    """What the scripted upstream plays for one call (see _script_lines)."""
    return _script_lines(max_frame_bytes).map(lambda lines: Script(map(Frame, lines)))


@st.composite
def _script_lines(draw: st.DrawFn, max_frame_bytes: int) -> list[bytes]:
    """The lines the scripted upstream plays for one call: extras, the generated answer (or
    none), maybe a second answer and more extras, and mostly a valid answer last so the call
    ends without waiting for the gateway's request timeout."""
    extras = upstream_extras(max_frame_bytes)
    lines = draw(st.lists(extras, max_size=3))
    if draw(st.integers(0, 9)):
        lines.append(
            to_bytes(encode(draw(upstream_answers()), ensure_ascii=draw(st.integers(0, 4)) > 0))
        )
    if not draw(st.integers(0, 5)):
        lines.append(to_bytes(encode(draw(upstream_answers()))))
    lines.extend(draw(st.lists(extras, max_size=2)))
    if draw(st.integers(0, 9)):
        lines.append(FALLBACK)
    return lines
