"""A JSON / JSONC reader that keeps where every value sits in the text, for surgical edits.

Comments and trailing commas are accepted only in JSONC mode; duplicate keys are refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_DEPTH = 64
BOM = "\ufeff"

NodeKind = Literal["object", "array", "string", "number", "literal"]
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_SPACE = re.compile(r"[ \t\r\n]*")
_SKIPPABLE = " \t\r\n/"
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"', re.S)
_LOOSE_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)  # the same, control characters allowed


class JsoncError(ValueError):
    """The text is not valid JSON (or JSONC); the message gives line and column."""


@dataclass(slots=True)
class Member:
    key: str
    key_start: int
    value: Node


@dataclass(slots=True)
class Node:
    """One value: its kind, its span [start, end) in the text, and its Python value."""

    kind: NodeKind
    start: int
    end: int
    value: Any = None
    members: list[Member] = field(default_factory=list)  # objects, in order
    items: list[Node] = field(default_factory=list)  # arrays
    comments: list[tuple[int, int]] = field(default_factory=list)  # the root's: every comment

    def get(self, key: str) -> Node | None:
        for member in self.members:
            if member.key == key:
                return member.value
        return None

    def member(self, key: str) -> Member | None:
        for member in self.members:
            if member.key == key:
                return member
        return None

    def strings(self) -> list[Node]:
        """Every string value in this subtree (object keys are not values)."""
        found: list[Node] = []
        stack: list[Node] = [self]
        while stack:
            node = stack.pop()
            if node.kind == "string":
                found.append(node)
            stack.extend(m.value for m in node.members)
            stack.extend(node.items)
        return found


def position(text: str, offset: int) -> str:
    """`line L, column C` of an offset (1-based), for error messages."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


class _Reader:
    def __init__(self, text: str, jsonc: bool) -> None:
        self.text = text
        self.jsonc = jsonc
        self.pos = 0
        self.comments: list[tuple[int, int]] = []

    def fail(self, message: str, at: int | None = None) -> JsoncError:
        return JsoncError(f"{message} at {position(self.text, self.pos if at is None else at)}")

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        if self.pos < n and text[self.pos] not in _SKIPPABLE:
            return  # most calls: the next token is right here
        while True:
            space = _SPACE.match(text, self.pos)
            if space:
                self.pos = space.end()
            if self.pos >= n or text[self.pos] != "/":
                return
            if not self.jsonc:
                raise self.fail("comment in a file that must be plain JSON")
            if text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                end = n if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated /* comment")
                end += 2
            else:
                raise self.fail("unexpected character '/'")
            self.comments.append((self.pos, end))
            self.pos = end

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of text")
        char = self.text[self.pos]
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth)
        if char == '"':
            return self.string()
        match = _NUMBER.match(self.text, self.pos)
        if match:
            start, self.pos = self.pos, match.end()
            return Node("number", start, self.pos, json.loads(match.group()))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                start, self.pos = self.pos, self.pos + len(word)
                return Node("literal", start, self.pos, literal)
        raise self.fail(f"unexpected character {char!r}")

    def string(self) -> Node:
        start = self.pos
        match = _STRING.match(self.text, start)
        if match is None:
            loose = _LOOSE_STRING.match(self.text, start)
            raise self.fail(
                "control character inside a string" if loose else "unterminated string", start
            )
        self.pos = match.end()
        raw = match.group()
        if "\\" not in raw:
            return Node("string", start, self.pos, raw[1:-1])
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise self.fail(f"bad string ({exc.msg})", start) from None
        return Node("string", start, self.pos, decoded)

    def _expect_separator(self, close: str, what: str) -> bool:
        """After an element: True at the closing bracket, False after a comma."""
        self.skip()
        if self.text.startswith(close, self.pos):
            self.pos += 1
            return True
        if not self.text.startswith(",", self.pos):
            raise self.fail(f"expected ',' or '{close}' in {what}")
        self.pos += 1
        self.skip()
        if self.text.startswith(close, self.pos):
            if not self.jsonc:
                raise self.fail(f"trailing comma in {what}")
            self.pos += 1
            return True
        return False

    def object(self, depth: int) -> Node:
        node = Node("object", self.pos, self.pos)
        self.pos += 1
        self.skip()
        seen: dict[str, Any] = {}
        if self.text.startswith("}", self.pos):
            self.pos += 1
        else:
            while True:
                self.skip()
                if not self.text.startswith('"', self.pos):
                    raise self.fail("expected a quoted key")
                key = self.string()
                if key.value in seen:
                    raise self.fail(f"duplicate key {key.value!r}", key.start)
                self.skip()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("expected ':' after a key")
                self.pos += 1
                child = self.value(depth + 1)
                node.members.append(Member(key.value, key.start, child))
                seen[key.value] = child.value
                if self._expect_separator("}", "an object"):
                    break
        node.end = self.pos
        node.value = seen
        return node

    def array(self, depth: int) -> Node:
        node = Node("array", self.pos, self.pos)
        self.pos += 1
        self.skip()
        if self.text.startswith("]", self.pos):
            self.pos += 1
        else:
            while True:
                node.items.append(self.value(depth + 1))
                if self._expect_separator("]", "an array"):
                    break
        node.end = self.pos
        node.value = [item.value for item in node.items]
        return node


def parse(text: str, *, jsonc: bool) -> Node:
    """The document's root node; a leading byte-order mark is allowed and kept out of spans."""
    reader = _Reader(text, jsonc)
    if text.startswith(BOM):
        reader.pos = 1
    root = reader.value(0)
    reader.skip()
    if reader.pos != len(text):
        raise reader.fail("unexpected text after the document")
    root.comments = reader.comments
    return root
