"""Label values with bounded cardinality: sanitised, and at most N distinct values per scope.

Values come from config (upstream and guard ids), closed vocabularies, or hostile peers (tool
names, guard codes from hooks); past the cap, or when unusable, a value becomes a fixed stand-in.
"""

from __future__ import annotations

import re

OTHER = "_other"  # a value over its scope's cap
INVALID = "_invalid"  # a value with characters or a length a label does not take
UNLISTED = "_unlisted"  # a tool name the upstream's listed catalog does not hold
DEFAULT_TOOL_CAP = 50  # distinct listed tool names per upstream with a label of their own

_SAFE = re.compile(r"[A-Za-z0-9_.:/@-]{1,128}")


def safe_label(value: str) -> str:
    """The value itself when it is short and plain, else INVALID."""
    return value if _SAFE.fullmatch(value) else INVALID


class CappedLabels:
    """The first `cap` distinct (safe) values of each scope are kept; later ones are OTHER.

    Scopes are bounded by the caller (an upstream id or guard id from config), so memory is at
    most scopes x cap strings.
    """

    __slots__ = ("_seen", "cap", "max_scopes")

    def __init__(self, cap: int, max_scopes: int = 256) -> None:
        self.cap = cap
        self.max_scopes = max_scopes
        self._seen: dict[str, set[str]] = {}

    def admit(self, scope: str, value: str) -> str:
        seen = self._seen.get(scope)
        if seen is None:
            if len(self._seen) >= self.max_scopes:
                return OTHER
            seen = self._seen[scope] = set()
        if value in seen:
            return value
        if len(seen) >= self.cap:
            return OTHER
        label = safe_label(value)
        if label is value:
            seen.add(value)
        return label
