"""Canonical JSON for hashing: RFC 8785 (JCS) rules plus Unicode NFC on every string.

Rule: strings and keys NFC-normalised; object keys sorted by their UTF-16 code units; no
whitespace; integral floats within 2**53 written as integers, other floats in shortest
round-trip form; then SHA-256 over the UTF-8 bytes. See docs/canonical-hash.md.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from typing import Any

import orjson

_SAFE_INT = 2**53


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be")


def normalise(value: Any) -> Any:
    """The canonical form of a JSON value as Python objects (dict order = canonical order)."""
    if isinstance(value, str):
        return value if value.isascii() else unicodedata.normalize("NFC", value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and Infinity have no canonical JSON form")
        if value.is_integer() and abs(value) < _SAFE_INT:
            return int(value)
        return value
    if isinstance(value, dict):
        items = [(normalise(str(k)), normalise(v)) for k, v in value.items()]
        items.sort(key=lambda kv: _utf16_key(kv[0]))
        return dict(items)
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_INT64 = 2**63


def is_plain(value: Any) -> bool:
    """True if orjson's sorted output is already canonical: ASCII text, 64-bit ints, no floats.

    For such values NFC is the identity, UTF-16 and code-point key order agree, and number
    forms cannot differ. Checked iteratively, so depth cannot overflow the stack.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str) or not key.isascii():
                    return False
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -_INT64 <= item < _INT64:
                return False
        else:
            return False  # floats, tuples and anything else take the full path
    return True


def canonical_bytes(value: Any) -> bytes:
    """Canonical UTF-8 bytes of a JSON value."""
    if is_plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass  # e.g. nesting deeper than orjson allows: the general path decides
    norm = normalise(value)
    try:
        return orjson.dumps(norm)
    except TypeError:  # integers beyond 64 bits
        import json

        return json.dumps(norm, separators=(",", ":"), ensure_ascii=False).encode()


def canonical_sha256(value: Any) -> str:
    """Hex SHA-256 of the canonical bytes."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()
