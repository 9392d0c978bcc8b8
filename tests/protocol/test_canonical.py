"""Canonical JSON: the fast path for plain values is byte-identical to the general rule."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpward.protocol import canonical
from mcpward.protocol.canonical import canonical_bytes, canonical_sha256

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)


def general(value: Any) -> bytes:
    """The general path alone (normalise, then serialise), with the fast path switched off."""
    original = canonical.is_plain
    canonical.is_plain = lambda _value: False  # type: ignore[assignment]
    try:
        return canonical_bytes(value)
    finally:
        canonical.is_plain = original


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_fast_path_equals_the_general_rule(value: Any) -> None:
    assert canonical_bytes(value) == general(value)


def test_rules_that_matter() -> None:
    assert canonical_bytes({"b": 1.0, "a": [2.5]}) == b'{"a":[2.5],"b":1}'
    assert canonical_bytes({"é": "e\u0301"}) == canonical_bytes({"e\u0301": "é"})  # NFC
    # keys sort by UTF-16 code units: U+FF61 sorts after U+1F600's surrogates
    assert canonical_bytes({"\uff61": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\uff61":1}'.encode()
    assert canonical_bytes({"big": 2**70}) == b'{"big":1180591620717411303424}'
    assert len(canonical_sha256({"a": 1})) == 64


def test_plain_detection() -> None:
    assert canonical.is_plain({"a": [1, "x", None, True, {"b": -(2**63)}]})
    assert not canonical.is_plain({"a": 1.5})
    assert not canonical.is_plain({"é": 1})
    assert not canonical.is_plain({"a": 2**64})
