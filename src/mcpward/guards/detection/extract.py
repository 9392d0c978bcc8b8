"""Every string an agent will read in a tool, prompt or resource definition, with its field
path; and every string in a result payload. Iterative with bounded depth, never recursive.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcpward.pipeline.texts import MAX_DEPTH, key_path, payload_texts, render_path

__all__ = [
    "MAX_DEPTH",
    "MAX_STRINGS",
    "FieldText",
    "StructureLimit",
    "definition_texts",
    "key_path",
    "payload_strings",
]

MAX_STRINGS = 20_000

# Top-level fields of a tool/prompt/resource definition that an agent reads.
_DEFINITION_FIELDS = ("name", "title", "description", "uri", "uriTemplate", "mimeType")
_SCHEMA_FIELDS = ("inputSchema", "outputSchema", "arguments", "annotations")
# Inside a schema: text-bearing keywords. Property names are read too (they are keys).
# Schema keywords whose strings are structure, not prose; strings under any other key are read
# (description, title, default, enum, examples, const, and whatever odd place an attacker picks).
_NON_TEXT_KEYS = frozenset({"type", "required", "$ref", "$schema", "$id", "format"})
_PROPERTY_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


class StructureLimit(ValueError):
    """The value is nested deeper or holds more strings than the scanner will walk."""


@dataclass(frozen=True, slots=True)
class FieldText:
    path: str  # JSONPath-like, e.g. $.inputSchema.properties.url.description
    text: str
    is_name: bool = False  # a parameter or item name rather than prose


def definition_texts(item: Any) -> Iterator[FieldText]:
    """Readable strings of one listed item (tool, prompt, resource or template)."""
    if not isinstance(item, dict):
        return
    for field in _DEFINITION_FIELDS:
        value = item.get(field)
        if isinstance(value, str) and value:
            yield FieldText(f"$.{field}", value, is_name=field == "name")
    for field in _SCHEMA_FIELDS:
        if field in item:
            yield from _schema_texts(item[field], f"$.{field}")


def _schema_texts(root: Any, root_path: str) -> Iterator[FieldText]:
    """Walk a schema-like value: text keywords anywhere, property names, nested strings."""
    stack: list[tuple[Any, str, int, bool]] = [(root, root_path, 0, True)]
    emitted = 0
    while stack:
        value, path, depth, textual = stack.pop()
        if depth > MAX_DEPTH:
            raise StructureLimit(f"nested deeper than {MAX_DEPTH} levels at {path}")
        if isinstance(value, str):
            if textual and value:
                emitted += 1
                if emitted > MAX_STRINGS:
                    raise StructureLimit(f"more than {MAX_STRINGS} strings")
                yield FieldText(path, value)
        elif isinstance(value, dict):
            parent_key = path.rsplit(".", 1)[-1]
            for key, child in value.items():
                key = str(key)
                child_path = key_path(path, key)
                if parent_key in _PROPERTY_MAPS or parent_key == "arguments":
                    yield FieldText(child_path, key, is_name=True)
                stack.append((child, child_path, depth + 1, key not in _NON_TEXT_KEYS))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                stack.append((child, f"{path}[{index}]", depth + 1, textual))


def payload_strings(
    payload: Any, skip_keys: frozenset[str] = frozenset()
) -> Iterator[tuple[str, str]]:
    """(path, string) for every string value in a result payload outside `skip_keys`."""
    walked = payload_texts(payload, skip_keys)
    if walked.too_deep_prose is not None:
        raise StructureLimit(f"nested deeper than {MAX_DEPTH} levels at {walked.too_deep_prose}")
    for text, link, _depth, _media, prose in walked.items:
        if prose:
            yield render_path(link), text
