"""Every string of a judged payload, walked once per payload and phase and shared by the content
guards (secrets, response_injection, ...) through `Subject.texts()`.

Iterative and depth-bounded; field paths are rendered only when a guard asks for one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

MAX_DEPTH = 64

# Keys whose values are not text a model reads as prose (binary, identifiers, metadata).
NON_PROSE_KEYS = frozenset({"data", "blob", "mimeType", "type", "uri", "_meta", "annotations"})

# A field path as links: "$", or (parent link, dict key as str | list index as int).
PathLink = Any


def key_path(path: str, key: str) -> str:
    """`path.key`, or `path['key']` when the key is not an identifier."""
    if key.isidentifier():
        return f"{path}.{key}"
    escaped = key.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{escaped}']"


def render_path(link: PathLink) -> str:
    """A JSONPath-like rendering, e.g. `$.content[0].text`."""
    keys: list[str | int] = []
    while isinstance(link, tuple):
        link, key = link
        keys.append(key)
    path = str(link)
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else key_path(path, key)
    return path


# One string of a payload: (text, path link, depth, media, prose) - a plain tuple, the walk makes
# one per string on the hot path. media: inside base64 media (a `blob`, or `data` beside a
# `mimeType`); prose: not inside the value of a non-prose key. render_path(link) is its path.
PayloadText = tuple[str, PathLink, int, bool, bool]


class PayloadTexts(NamedTuple):
    """The strings of one payload and where its nesting passed the bound, per reading."""

    items: list[PayloadText]
    # where a value sits deeper than MAX_DEPTH outside base64 media (None: nowhere)
    too_deep: str | None
    # where a non-string value sits at MAX_DEPTH or deeper in prose (None: nowhere)
    too_deep_prose: str | None


def is_media_field(node: dict[str, Any], key: Any) -> bool:
    """Base64 media (image/audio `data`, a resource's `blob`) holds no text a guard reads."""
    return key == "blob" or (key == "data" and "mimeType" in node)


def payload_texts(payload: Any, non_prose_keys: frozenset[str] = NON_PROSE_KEYS) -> PayloadTexts:
    """Walk a JSON payload once: every string with its path link, depth and readings.

    Never raises for nesting: a walk stops one level past MAX_DEPTH and says where."""
    items: list[PayloadText] = []
    too_deep: PathLink = None
    too_deep_prose: PathLink = None
    stack: list[tuple[Any, PathLink, int, bool, bool]] = [(payload, "$", 0, False, True)]
    pop, push, add = stack.pop, stack.append, items.append
    while stack:
        value, link, depth, media, prose = pop()
        if isinstance(value, str):
            add((value, link, depth, media, prose))
            continue
        if depth >= MAX_DEPTH:
            if prose and too_deep_prose is None:
                too_deep_prose = link
            if depth > MAX_DEPTH:
                if not media and too_deep is None:
                    too_deep = link
                continue
        below = depth + 1
        every = below >= MAX_DEPTH  # near the bound, scalars count too (they are too deep)
        if isinstance(value, dict):
            mime = "mimeType" in value
            for key, child in value.items():
                if every or isinstance(child, (str, dict, list)):
                    name = key if isinstance(key, str) else str(key)
                    # is_media_field, inlined (once per value on the hot path)
                    in_media = media or name == "blob" or (mime and name == "data")
                    push(
                        (child, (link, name), below, in_media, prose and name not in non_prose_keys)
                    )
        elif isinstance(value, list):
            for index, child in enumerate(value):
                if every or isinstance(child, (str, dict, list)):
                    push((child, (link, index), below, media, prose))
    return PayloadTexts(
        items,
        None if too_deep is None else render_path(too_deep),
        None if too_deep_prose is None else render_path(too_deep_prose),
    )
