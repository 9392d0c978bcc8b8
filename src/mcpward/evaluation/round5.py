"""Round-5 rows (definitions, tool results, cross-server references), judged by the default
guards: definitions through tool_poisoning (flagged = dropped), results through
response_injection (flagged = a warning), cross-server rows through tool_shadowing with the
other servers' tools in the catalog. Used on our development set (`data/round5_dev.jsonl`) and,
once, on the sealed set (`tests/evaluation/sealed/`, `mcpward eval sealed`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpward.evaluation.guards import injection_guard, poisoning_guard
from mcpward.evaluation.stats import Rate
from mcpward.evaluation.synthetic import DATA
from mcpward.guards.tool_shadowing import ToolShadowingOptions, find_shadowing

KINDS = ("definition", "result", "result-all", "cross_server")
GUARD_OF = {"definition": "tool_poisoning", "result": "response_injection",
            "result-all": "response_injection with the opt-in `learned_reads: all`",
            "cross_server": "tool_shadowing"}  # fmt: skip


def load_rows(path: Path | None = None, text: str | None = None) -> list[dict[str, Any]]:
    """JSONL rows from `text`, or from `path` (default: our development set)."""
    if text is None:
        text = (path or DATA / "round5_dev.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def open_sealed(directory: Path, stem: str = "round5") -> str:
    """The plaintext of a sealed set (`<stem>.jsonl.fernet` with `<stem>.key`), decrypted in
    memory and checked against `<stem>.sha256`; ValueError when it does not match."""
    import hashlib

    from cryptography.fernet import Fernet  # only for this command

    key = (directory / f"{stem}.key").read_bytes().strip()
    data = Fernet(key).decrypt((directory / f"{stem}.jsonl.fernet").read_bytes())
    expected = (directory / f"{stem}.sha256").read_text().strip()
    if hashlib.sha256(data).hexdigest() != expected:
        raise ValueError(f"SHA-256 of the opened {stem} set does not match {stem}.sha256")
    return data.decode("utf-8")


def _as_tool(tool: Any) -> dict[str, Any]:
    """Another server's tool: a definition, or only its name (the sealed set lists names)."""
    return tool if isinstance(tool, dict) else {"name": str(tool), "inputSchema": {}}


class Judge:
    """The three default guards, built once."""

    def __init__(self) -> None:
        self.poisoning = poisoning_guard()
        self.injection = injection_guard()
        self.injection_all = injection_guard(reads="all")
        self.shadowing = ToolShadowingOptions()

    def flagged(self, row: dict[str, Any], kind: str | None = None) -> bool:
        """Whether the guard of `kind` (default: the row's) flags the row."""
        kind = kind or row["kind"]
        if kind == "definition":
            return self.poisoning.judge(row["tool"]).flagged
        if kind == "result":
            payload = {"content": [{"type": "text", "text": row["text"]}], "isError": False}
            return bool(self.injection.flagged_texts(payload))
        if kind == "result-all":
            payload = {"content": [{"type": "text", "text": row["text"]}], "isError": False}
            return bool(self.injection_all.flagged_texts(payload))
        if kind == "cross_server":
            server, tool = row["server"], row["tool"]
            others = {uid: [_as_tool(t) for t in tools] for uid, tools in
                      (row.get("other_servers") or {}).items()}  # fmt: skip
            catalog = {**others, server: [tool]}
            order = [*others, server]  # the row's server comes last: it gives way
            return bool(find_shadowing(server, [tool], catalog, order, self.shadowing))
        raise ValueError(f"unknown row kind {kind!r}")


@dataclass(slots=True)
class Cell:
    """Flagged out of n, for one label."""

    flagged: int = 0
    n: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def rate(self) -> Rate:
        return Rate.of(self.flagged, self.n)


def tabulate(rows: Iterable[dict[str, Any]], judge: Judge | None = None) -> dict[str, Cell]:
    """Cells keyed `kind|label|group` for group in `all`, `lang=xx`, `family=yy`."""
    judge = judge or Judge()
    cells: dict[str, Cell] = defaultdict(Cell)
    for row in rows:
        for kind in ("result", "result-all") if row["kind"] == "result" else (row["kind"],):
            _count(cells, row, kind, judge.flagged(row, kind))
    return dict(cells)


def _count(cells: dict[str, Cell], row: dict[str, Any], kind: str, hit: bool) -> None:
    groups = ["all", f"lang={row.get('lang')}", f"family={row.get('family')}"]
    if row.get("hard"):
        groups.append("hard")
    if row.get("namespaced"):
        groups.append("namespaced")
    for group in groups:
        cell = cells[f"{kind}|{row['label']}|{group}"]
        cell.n += 1
        cell.flagged += hit
        if hit != (row["label"] == "poisoned") and group == "all":
            cell.misses.append(str(row.get("id")))


def _fmt(cell: Cell) -> str:
    r = cell.rate
    return f"{cell.flagged}/{cell.n} = {r.value:.3f} [{r.low:.3f}, {r.high:.3f}]"


def markdown(cells: dict[str, Cell], kinds: Sequence[str] = KINDS) -> str:
    """One table per kind: recall of the poisoned rows and flags on the benign ones, by group."""
    out: list[str] = []
    for kind in kinds:
        keys = sorted({k.split("|", 2)[2] for k in cells if k.startswith(kind + "|")},
                      key=lambda g: (g != "all", g))  # fmt: skip
        if not keys:
            continue
        out += [f"**{kind}** ({GUARD_OF[kind]})", "",
                "| group | poisoned flagged (recall [95% CI]) | benign flagged (FPR [95% CI]) |",
                "|---|---|---|"]  # fmt: skip
        for group in keys:
            p = cells.get(f"{kind}|poisoned|{group}")
            b = cells.get(f"{kind}|benign|{group}")
            out.append(f"| {group} | {_fmt(p) if p else '-'} | {_fmt(b) if b else '-'} |")
        out.append("")
    return "\n".join(out)
