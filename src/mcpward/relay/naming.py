"""Names and cursors across several upstreams: `<id><sep><name>` prefixes and wrapped cursors.

With one upstream and namespacing off, names and cursors pass through untouched.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import orjson

CURSOR_PREFIX = "mcpward1."


class CursorError(ValueError):
    """A cursor the gateway did not issue (or that was tampered with)."""


class Namespace:
    """Maps client-facing names to (upstream id, upstream-local name) and back."""

    def __init__(self, upstream_ids: Sequence[str], separator: str, enabled: bool) -> None:
        self.upstream_ids = list(upstream_ids)
        self.separator = separator
        self.enabled = enabled
        self._known = set(self.upstream_ids)
        for upstream in self.upstream_ids:
            if enabled and separator in upstream:
                raise ValueError(
                    f"upstream id {upstream!r} contains the namespace separator {separator!r}; "
                    "names would be ambiguous — rename the upstream or change the separator"
                )

    def outward(self, upstream: str, name: str) -> str:
        return f"{upstream}{self.separator}{name}" if self.enabled else name

    def inward(self, name: str) -> tuple[str, str] | None:
        """(upstream id, local name) for a client-facing name, or None if no upstream has it."""
        if not self.enabled:
            return (self.upstream_ids[0], name) if self.upstream_ids else None
        upstream, sep, local = name.partition(self.separator)
        if not sep or upstream not in self._known or not local:
            return None
        return upstream, local

    def wrap_cursor(self, index: int, cursor: str | None) -> str:
        raw = orjson.dumps([index, cursor])
        return CURSOR_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def unwrap_cursor(self, cursor: object) -> tuple[int, str | None]:
        """(upstream index, upstream cursor) from a client cursor; CursorError if not ours."""
        if not isinstance(cursor, str) or not cursor.startswith(CURSOR_PREFIX):
            raise CursorError("unknown cursor")
        body = cursor[len(CURSOR_PREFIX) :]
        try:
            value = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (ValueError, TypeError):
            raise CursorError("malformed cursor") from None
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not isinstance(value[0], int)
            or not 0 <= value[0] < len(self.upstream_ids)
            or not (value[1] is None or isinstance(value[1], str))
        ):
            raise CursorError("malformed cursor")
        return value[0], value[1]
