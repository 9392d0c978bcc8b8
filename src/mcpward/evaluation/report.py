"""The evaluation table as rich output, JSON, or Markdown (docs/detection-quality.md)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from mcpward.evaluation.detectors import rate_text
from mcpward.evaluation.rows import Row

COLUMNS = ("guard", "dataset", "split", "TP", "FP", "FN", "TN", "precision [95% CI]",
           "recall [95% CI]", "FPR [95% CI]", "goal")  # fmt: skip


def _cells(row: Row) -> list[str]:
    c = row.counts
    return [
        row.guard, row.dataset, row.split, str(c.tp), str(c.fp), str(c.fn), str(c.tn),
        rate_text(c.precision), rate_text(c.recall), rate_text(c.fpr), row.goal,
    ]  # fmt: skip


def rich_table(rows: Sequence[Row]) -> Table:
    table = Table(title="Detection quality (95% Clopper-Pearson intervals)", show_lines=False)
    for name in COLUMNS:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*_cells(row))
    return table


def markdown_table(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"
