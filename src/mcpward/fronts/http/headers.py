"""A request's headers, read once: trimmed in the scope, decoded by name, repeats noted.

RFC 9110 section 5.5: a field value excludes leading and trailing whitespace. h11 strips it,
httptools does not; every check sees the same values whichever parser ran, and so does anything
else reading `scope["headers"]` after this.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, overload


@dataclass(frozen=True, slots=True)
class RequestHeaders:
    """`values` by lower-case name (the last copy of a repeated header, as a mapping holds it);
    `repeated` names every header sent more than once, for the checks that refuse repeats."""

    values: dict[str, str]
    repeated: frozenset[str]

    @overload
    def get(self, name: str) -> str | None: ...
    @overload
    def get(self, name: str, default: str) -> str: ...
    def get(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name, default)

    def count(self, name: str) -> int:
        """0, 1, or 2 meaning "more than one"."""
        if name not in self.values:
            return 0
        return 2 if name in self.repeated else 1


def read_headers(scope: MutableMapping[str, Any]) -> RequestHeaders:
    """Trim the scope's header values in place and return them decoded, in one pass."""
    trimmed: list[tuple[bytes, bytes]] = []
    values: dict[str, str] = {}
    repeated: set[str] = set()
    for key, value in scope["headers"]:
        value = value.strip(b" \t")
        trimmed.append((key, value))
        name = key.decode("latin-1").lower()
        if name in values:
            repeated.add(name)
        values[name] = value.decode("latin-1")
    scope["headers"] = trimmed
    return RequestHeaders(values, frozenset(repeated) if repeated else _NONE)


_NONE: frozenset[str] = frozenset()

# Headers a check reads one value of: sent twice, a check could judge one copy while another
# part (or a proxy in front) acts on the other. Origin is the DNS-rebinding check's (403).
SINGLE_VALUED = (
    "host",
    "authorization",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "content-length",
    "content-type",
)


def repeat_refusal(headers: RequestHeaders) -> tuple[int, str] | None:
    """(status, message) for a request that repeats a security-relevant header, else None."""
    if not headers.repeated:
        return None
    if "origin" in headers.repeated:
        return 403, "more than one Origin header"
    for name in SINGLE_VALUED:
        if name in headers.repeated:
            return 400, f"more than one {name} header"
    return None
