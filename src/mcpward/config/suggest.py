"""Near-match suggestions for an unknown config field: the valid fields at that place, found by
walking the JSON Schema of the model that refused it, and the closest one by difflib."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from difflib import get_close_matches
from typing import Any


def _expand(schema: dict[str, Any], defs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The schema and every alternative it stands for ($ref, anyOf, oneOf, allOf)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, dict):
            yield from _expand(target, defs)
        return
    yield schema
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            if isinstance(option, dict):
                yield from _expand(option, defs)


def _fields_at(schema: dict[str, Any], path: Sequence[int | str]) -> set[str]:
    defs = schema.get("$defs", {})
    current = [schema]
    for part in path:
        following: list[dict[str, Any]] = []
        for node in current:
            for option in _expand(node, defs):
                if isinstance(part, int):
                    items = option.get("items")
                    if isinstance(items, dict):
                        following.append(items)
                else:
                    child = option.get("properties", {}).get(part)
                    if isinstance(child, dict):
                        following.append(child)
        current = following
    return {
        name
        for node in current
        for option in _expand(node, defs)
        for name in option.get("properties", {})
    }


def unknown_field_message(schema: dict[str, Any] | None, loc: Sequence[int | str]) -> str:
    """The message for an unknown field at `loc`: the closest valid name, and the valid ones."""
    base = "unknown field"
    if schema is None or not loc or not isinstance(loc[-1], str):
        return f"{base}; check the spelling (`mcpward config schema` lists the fields)"
    valid = sorted(_fields_at(schema, loc[:-1]))
    if not valid:
        return f"{base}; check the spelling (`mcpward config schema` lists the fields)"
    close = get_close_matches(loc[-1], valid, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{base}{hint} (valid here: {', '.join(valid)})"
