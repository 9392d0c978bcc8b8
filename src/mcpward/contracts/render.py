"""Rich renderings of holds, diffs and pins for the CLI and the demo.

Attacker-controlled text is sanitised and always passed as `Text` (never parsed as markup).
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mcpward.contracts.holds import Commands, hold_code
from mcpward.contracts.model import WHOLE_UPSTREAM, HoldRecord, Pin, Verdict
from mcpward.contracts.postures import GUARD_TABLE
from mcpward.contracts.review import HoldDiff
from mcpward.contracts.sanitize import sanitize_text
from mcpward.contracts.snapshot_file import SnapshotDiff
from mcpward.contracts.taxonomy import Change, family

VERDICT_STYLE = {
    Verdict.PROCEED: "green",
    Verdict.HOLD: "bold red",
    Verdict.INCONCLUSIVE: "bold yellow",
}


def _value(value: Any, limit: int = 100) -> Text:
    if value is None:
        return Text("—", style="dim")
    try:
        raw = orjson.dumps(value).decode() if not isinstance(value, str) else value
    except (TypeError, orjson.JSONEncodeError):
        raw = repr(value)
    return Text(sanitize_text(raw, limit))


def changes_table(changes: list[Change], *, values: bool = True) -> Table:
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in ("kind", "family", "where", "detail", *(("before", "after") if values else ())):
        # wrap, never cut
        table.add_column(column, style="dim" if column == "family" else "", overflow="fold")
    for change in changes:
        row: list[RenderableType] = [
            Text(
                change.kind.value,
                style="bold" if GUARD_TABLE[change.kind][0] is not Verdict.PROCEED else "",
            ),
            Text(family(change.kind).value),
            Text(sanitize_text(change.path, 80)),
            Text(sanitize_text(change.detail, 80)),
        ]
        if values:
            row += [_value(change.before), _value(change.after)]
        table.add_row(*row)
    return table


def hold_panel(hold: HoldRecord, commands: Commands) -> Panel:
    """The banner shown when a call is held."""
    what = (
        "pin store"
        if hold.name == WHOLE_UPSTREAM
        else f"{hold.kind.value} {sanitize_text(hold.name, 80)}"
    )
    body = Text()
    body.append(
        "A contract moved against its pin; the call was held before it reached the upstream.\n"
    )
    body.append("upstream: ", style="bold")
    body.append(sanitize_text(hold.upstream, 64) + "\n")
    body.append("item:     ", style="bold")
    body.append(what + "\n")
    body.append("changes:  ", style="bold")
    body.append(", ".join(hold.change_kinds) + "\n")
    body.append("verdict:  ", style="bold")
    body.append(
        f"{hold.verdict.value} under posture {hold.posture}", style=VERDICT_STYLE[hold.verdict]
    )
    if not hold.enforced:
        body.append(" (monitor: recorded, not enforced)", style="dim")
    body.append("\nhash:     ", style="bold")
    body.append(f"{(hold.old_hash or '-')[:16]} -> {(hold.new_hash or '-')[:16]}\n")
    body.append("review:   ", style="bold")
    body.append(commands.review(hold) + "\n")
    body.append("accept:   ", style="bold")
    body.append(commands.accept(hold))
    return Panel(body, title=f"HOLD ({hold_code(hold)})", border_style="red", expand=False)


def hold_diff_view(diff: HoldDiff, commands: Commands) -> RenderableType:
    return Group(hold_panel(diff.hold, commands), changes_table(diff.changes))


def holds_table(holds: list[HoldRecord]) -> Table:
    table = Table(show_header=True, header_style="bold")
    for col in ("upstream", "item", "reason", "verdict", "posture", "changes", "since"):
        table.add_column(col, overflow="fold")  # wrap, never cut
    for hold in holds:
        item = (
            "(whole upstream)"
            if hold.name == WHOLE_UPSTREAM
            else f"{hold.kind.value} {sanitize_text(hold.name, 60)}"
        )
        verdict = Text(
            hold.verdict.value + ("" if hold.enforced else " (monitor)"),
            style=VERDICT_STYLE[hold.verdict],
        )
        table.add_row(
            Text(sanitize_text(hold.upstream, 64)),
            Text(item),
            Text(hold.reason),
            verdict,
            Text(hold.posture),
            Text(sanitize_text(", ".join(hold.change_kinds), 120)),
            Text(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(hold.first_seen))),
        )
    return table


def pins_table(pins: list[Pin]) -> Table:
    table = Table(show_header=True, header_style="bold")
    for col in ("kind", "name", "hash", "source", "pinned"):
        table.add_column(col, overflow="fold")  # wrap, never cut
    for pin in sorted(pins, key=lambda p: (p.kind.value, p.name)):
        table.add_row(
            Text(pin.kind.value),
            Text(sanitize_text(pin.name, 80)),
            Text(pin.hash[:16]),
            Text(pin.source),
            Text(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(pin.pinned_at))),
        )
    return table


def snapshot_diff_view(diff: SnapshotDiff) -> RenderableType:
    parts: list[RenderableType] = []
    if not diff.items:
        parts.append(Text(f"no change in {', '.join(diff.compared)}", style="green"))
    for item in diff.items:
        title = Text()
        title.append(f"{item.kind.value} ", style="bold")
        title.append(sanitize_text(item.name, 80))
        title.append("  ")
        title.append(item.decision.judged.value, style=VERDICT_STYLE[item.decision.judged])
        if item.decision.holding:
            title.append(f"  (holds on: {', '.join(item.decision.holding)})", style="dim")
        parts += [title, changes_table(item.changes)]
    summary = Text("overall: ")
    summary.append(diff.verdict.value, style=VERDICT_STYLE[diff.verdict])
    parts.append(summary)
    return Group(*parts)


def snapshot_diff_json(diff: SnapshotDiff, posture: str) -> dict[str, Any]:
    return {
        "posture": posture,
        "verdict": diff.verdict.value,
        "compared": diff.compared,
        "items": [
            {
                "kind": item.kind.value,
                "name": item.name,
                "verdict": item.decision.judged.value,
                "holding_kinds": list(item.decision.holding),
                "changes": [c.to_json(with_values=True) for c in item.changes],
            }
            for item in diff.items
        ],
    }
