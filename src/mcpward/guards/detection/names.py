"""Name comparison for shadowing and typosquat checks: the collision key of a tool or server
name (case, separators, confusables, decorations such as `_v1`/`_enhanced`), and edit distance.
"""

from __future__ import annotations

from mcpward.guards.detection.regex import compile_pattern, encodable
from mcpward.guards.detection.unicode import skeleton

# Words attackers wrap around a real tool's name to make a look-alike win the model's choice.
_DECORATIONS = (
    "enhanced", "advanced", "premium", "official", "secure", "improved", "updated", "latest",
    "new", "pro", "plus", "best", "ultimate", "fixed", "safe", "better", "real", "true",
)  # fmt: skip
# RE2 (linear time): with backtracking, the lazy core before a repeated suffix costs the square
# of the name's length (a 16 KB name like `a-1-1-...-1x` took 7 s of CPU); upstreams pick names.
# `\p{Nd}` is what `\d` means in Python's `re` on str (RE2's `\d` is ASCII only).
_DECORATED = compile_pattern(
    r"(?i)^(?:(?:" + "|".join(_DECORATIONS) + r")[-_. ]+)*(?P<core>.+?)"
    r"(?:[-_. ]+(?:v\p{Nd}+|" + "|".join(_DECORATIONS) + r"|\p{Nd}+))*$"
)


def collision_key(name: str, strip_decorations: bool = True) -> str:
    """Two names with the same key are the same name to a model reading a tool list."""
    if strip_decorations:
        name = name.strip()
        match = _DECORATED.match(encodable(name))  # same length: spans hold for `name`
        if match and match.group("core"):
            start, end = match.span(1)  # the core (group 1; RE2 spans take a number)
            name = name[start:end]
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
