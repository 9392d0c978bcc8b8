"""Name comparison for shadowing and typosquat checks: the collision key of a tool or server
name (case, separators, confusables, decorations such as `_v1`/`_enhanced`), and edit distance.
"""

from __future__ import annotations

import re

from mcpward.guards.detection.unicode import skeleton

# Words attackers wrap around a real tool's name to make a look-alike win the model's choice.
_DECORATIONS = (
    "enhanced", "advanced", "premium", "official", "secure", "improved", "updated", "latest",
    "new", "pro", "plus", "best", "ultimate", "fixed", "safe", "better", "real", "true",
)  # fmt: skip
_DECORATED = re.compile(
    r"^(?:(?:" + "|".join(_DECORATIONS) + r")[-_. ]+)*(?P<core>.+?)"
    r"(?:[-_. ]+(?:v\d+|" + "|".join(_DECORATIONS) + r"|\d+))*$",
    re.IGNORECASE,
)


def collision_key(name: str, strip_decorations: bool = True) -> str:
    """Two names with the same key are the same name to a model reading a tool list."""
    if strip_decorations:
        match = _DECORATED.match(name.strip())
        if match and match.group("core"):
            name = match.group("core")
    return skeleton(name)


def within_one_edit(a: str, b: str) -> bool:
    """True if a and b differ by at most one insertion, deletion, substitution or swap."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diffs = [i for i in range(la) if a[i] != b[i]]
        if len(diffs) == 1:
            return True
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and a[diffs[0]] == b[diffs[1]]
            and a[diffs[1]] == b[diffs[0]]
        )
    if la > lb:
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1 :]
