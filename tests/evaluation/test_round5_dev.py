"""The round-5 development rows through the default guards (a development number: tuned on),
and the concept lexicons' sanity: no concept matches empty text."""

from __future__ import annotations

import re2

from mcpward.evaluation import round5
from mcpward.guards.detection.concepts import CONCEPTS, ORDER_CUES


def test_no_concept_matches_the_empty_text() -> None:
    for pattern in [c.pattern for c in CONCEPTS] + [ORDER_CUES]:
        assert re2.search(pattern, "") is None
        assert re2.search(pattern, "Lists the files of a folder.") is None


def test_development_rows_hold() -> None:
    cells = round5.tabulate(round5.load_rows())
    for kind, recall in (("definition", 0.9), ("result", 0.9), ("cross_server", 0.9)):
        poisoned, benign = cells[f"{kind}|poisoned|all"], cells[f"{kind}|benign|all"]
        assert poisoned.flagged >= recall * poisoned.n, (kind, poisoned.misses)
        assert benign.flagged == 0, (kind, benign.misses)
