"""Injection/exfiltration markers newly present between a pinned and a live contract.

The scanning itself is injected (the tool_poisoning scanner, via `guards.rug_pull.marker_scan`),
so the contract layer judges only "more markers than the pin had", never what a marker is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

# definition -> {marker family: paths of the strings where it occurs}
MarkerScan = Callable[[Any], Mapping[str, Sequence[str]]]


def new_markers(old: Any, new: Any, scan: MarkerScan) -> dict[str, list[str]]:
    """Families that occur more often in `new` than in `old`, with the new occurrences' paths."""
    before = scan(old) if old is not None else {}
    after = scan(new)
    out: dict[str, list[str]] = {}
    for family, paths in after.items():
        old_paths = list(before.get(family, ()))
        if len(paths) > len(old_paths):
            fresh = [p for p in paths if p not in set(old_paths)] or list(paths)
            out[family] = fresh
    return out
