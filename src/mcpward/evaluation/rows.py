"""A row of `mcpward eval detectors` and how verdicts are counted into it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcpward.evaluation.stats import Confusion

T = TypeVar("T")


@dataclass(slots=True)
class Row:
    guard: str
    dataset: str
    split: str
    counts: Confusion
    goal: str = ""
    note: str = ""
    missed: list[str] = field(default_factory=list)  # ids/categories of misses, for `--verbose`

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        return {
            "guard": self.guard,
            "dataset": self.dataset,
            "split": self.split,
            "tp": c.tp,
            "fp": c.fp,
            "fn": c.fn,
            "tn": c.tn,
            "precision": c.precision.as_dict(),
            "recall": c.recall.as_dict(),
            "fpr": c.fpr.as_dict(),
            "goal": self.goal,
            "note": self.note,
        }


def count(
    items: Iterable[T],
    positive: Callable[[T], bool],
    flagged: Callable[[T], bool],
    label: Callable[[T], str],
) -> tuple[Confusion, list[str]]:
    tp = fp = fn = tn = 0
    missed: list[str] = []
    for item in items:
        hit = flagged(item)
        if positive(item):
            if hit:
                tp += 1
            else:
                fn += 1
                missed.append(label(item))
        elif hit:
            fp += 1
            missed.append("FP " + label(item))
        else:
            tn += 1
    return Confusion(tp, fp, fn, tn), missed
