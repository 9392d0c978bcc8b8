"""One parser and one serialiser that agree (issue 23): whatever `loads` accepts, `dumps` writes;
the standard-library path refuses what orjson refuses; nesting is capped; `dumps` raises only
NotSerialisable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpward.protocol import jsonrpc
from mcpward.protocol.jsonrpc import MAX_DEPTH, FrameError, NotSerialisable, TooDeep

BIG = b"12345678901234567890"

# text with lone surrogates, and integers beyond 64 bits: what used to split the two paths
ODD_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_what_parses_serialises_and_what_cannot_be_written_raises_one_error(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=True)  # \\ud800 escapes, as a hostile peer writes them
    try:
        jsonrpc.dumps(value)
        writable = True
    except NotSerialisable:
        writable = False
    try:
        parsed = jsonrpc.loads(text.encode())
    except ValueError:
        parsed, readable = None, False
    else:
        readable = True
    assert readable == writable  # refused on the way in iff it could not go out
    if readable:
        assert jsonrpc.loads(jsonrpc.dumps(parsed)) == parsed


@pytest.mark.parametrize(
    "frame",
    [
        b'{"a":"\\ud800","n":' + BIG + b"}",  # a lone surrogate beside a 20-digit integer
        b'{"\\udfff":' + BIG + b"}",
        b'{"a":"\xed\xa0\x80","n":' + BIG + b"}",  # a surrogate as (invalid) UTF-8
        b'\xef\xbb\xbf{"n":' + BIG + b"}",  # a byte order mark
        b'{"n":' + BIG + b',"x":NaN}',
        b'{"n":' + BIG + b',"x":1e400}',
        b'{"n":' + BIG + b"} trailing",
        '{"n":12345678901234567890}'.encode("utf-16"),
    ],
)
def test_the_exact_integer_path_refuses_what_orjson_refuses(frame: bytes) -> None:
    with pytest.raises(ValueError):
        jsonrpc.loads(frame)
    with pytest.raises(FrameError) as caught:
        jsonrpc.parse_frame(frame)
    assert caught.value.code == -32700


def test_integers_beyond_64_bits_stay_exact() -> None:
    value = jsonrpc.loads(b'{"a":123456789012345678901234,"b":-9223372036854775809}')
    assert value == {"a": 123456789012345678901234, "b": -9223372036854775809}
    assert jsonrpc.dumps(value) == b'{"a":123456789012345678901234,"b":-9223372036854775809}'


def _nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def test_nesting_is_capped_on_the_way_in() -> None:
    assert jsonrpc.loads(_nested(MAX_DEPTH)) is not None
    for levels in (MAX_DEPTH + 1, 1000, 1024, 5000):
        with pytest.raises(TooDeep if levels <= 1024 else ValueError):
            jsonrpc.loads(_nested(levels))


def test_a_deep_request_is_refused_with_its_id_and_a_deep_notification_is_dropped() -> None:
    deep = _nested(500)
    with pytest.raises(FrameError) as caught:
        jsonrpc.parse_frame(
            b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":' + deep + b"}}"
        )
    assert (caught.value.code, caught.value.request_id, caught.value.notification) == (
        -32600,
        4,
        False,
    )
    with pytest.raises(FrameError) as caught:
        jsonrpc.parse_frame(b'{"jsonrpc":"2.0","method":"x/y","params":{"x":' + deep + b"}}")
    assert caught.value.notification


def test_dumps_raises_only_not_serialisable() -> None:
    deep: list[Any] = []
    cursor = deep
    for _ in range(3000):
        cursor.append([])
        cursor = cursor[0]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for value in ("\ud800", {"a": "\udc00", "n": 10**30}, deep, {1j: 1}, object(), cyclic):
        with pytest.raises(NotSerialisable):
            jsonrpc.dumps(value)
    assert issubclass(NotSerialisable, ValueError)
