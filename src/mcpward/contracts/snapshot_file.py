"""Saved list results on disk (what `mcpward snapshot` writes and `mcpward diff` reads).

Accepted input: a JSON-RPC response whose result holds the lists, a bare `{"tools": [...]}`,
or mcpward's snapshot format (tools, prompts, resources, resourceTemplates, instructions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpward.contracts.classify import classify_maps
from mcpward.contracts.extract import ContractMap, snapshot_contracts
from mcpward.contracts.markers import MarkerScan
from mcpward.contracts.model import ItemKind, Verdict
from mcpward.contracts.postures import PostureDecision, PostureTable
from mcpward.contracts.taxonomy import Change

LIST_KEYS: dict[str, ItemKind] = {
    "tools": ItemKind.TOOL,
    "prompts": ItemKind.PROMPT,
    "resources": ItemKind.RESOURCE,
    "resourceTemplates": ItemKind.RESOURCE_TEMPLATE,
}
MAX_FILE_BYTES = 64 * 1024 * 1024


class SnapshotError(Exception):
    """A file that is not a usable list result; the message says what is wrong."""


@dataclass(slots=True)
class Snapshot:
    source: str
    lists: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    instructions: str | None = None
    has_instructions: bool = False
    server: dict[str, Any] | None = None

    def contracts(self) -> ContractMap:
        return snapshot_contracts(
            tools=self.lists.get("tools"),
            prompts=self.lists.get("prompts"),
            resources=self.lists.get("resources"),
            resource_templates=self.lists.get("resourceTemplates"),
            instructions=self.instructions,
            include_instructions=self.has_instructions,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: value for key, value in self.lists.items()}
        if self.has_instructions:
            out["instructions"] = self.instructions
        if self.server is not None:
            out["server"] = self.server
        return out


def parse_snapshot(data: Any, source: str = "<snapshot>") -> Snapshot:
    if isinstance(data, Mapping) and "jsonrpc" in data:
        if "error" in data:
            raise SnapshotError(f"{source}: holds a JSON-RPC error, not a list result")
        data = data.get("result")
    if not isinstance(data, Mapping):
        raise SnapshotError(f'{source}: expected a JSON object with a "tools" list')
    snap = Snapshot(source)
    for key in LIST_KEYS:
        if key not in data:
            continue
        items = data[key]
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            raise SnapshotError(f'{source}: "{key}" must be a list of objects')
        snap.lists[key] = [dict(i) for i in items]
    if "instructions" in data:
        value = data["instructions"]
        if value is not None and not isinstance(value, str):
            raise SnapshotError(f'{source}: "instructions" must be a string or null')
        snap.instructions, snap.has_instructions = value, True
    if isinstance(data.get("server"), Mapping):
        snap.server = dict(data["server"])
    if not snap.lists:
        raise SnapshotError(
            f'{source}: no "tools", "prompts", "resources" or "resourceTemplates" list found'
        )
    return snap


def read_snapshot(path: Path) -> Snapshot:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SnapshotError(f"{path}: {size} bytes is over the {MAX_FILE_BYTES}-byte limit")
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise SnapshotError(f"{path}: not valid JSON: {exc}") from None
    return parse_snapshot(data, str(path))


def write_snapshot(path: Path, snapshot: Snapshot) -> None:
    """Write atomically (temp file + rename) so a half-written snapshot never exists."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(
        orjson.dumps(snapshot.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    )
    tmp.replace(path)


@dataclass(slots=True)
class ItemDiff:
    kind: ItemKind
    name: str
    changes: list[Change]
    decision: PostureDecision


@dataclass(slots=True)
class SnapshotDiff:
    """`mcpward diff`'s answer: per-item changes and the overall verdict under one posture."""

    items: list[ItemDiff]
    compared: list[str]  # the lists present in both files
    verdict: Verdict

    @property
    def changed(self) -> bool:
        return bool(self.items)


def diff_snapshots(
    old: Snapshot, new: Snapshot, table: PostureTable, markers: MarkerScan | None = None
) -> SnapshotDiff:
    """Compare the lists present in both files (a list missing from one side is not "removed")."""
    compared = [k for k in LIST_KEYS if k in old.lists and k in new.lists]
    kinds = {LIST_KEYS[k] for k in compared}
    if old.has_instructions and new.has_instructions:
        kinds.add(ItemKind.SERVER)
        compared.append("instructions")
    if not compared:
        raise SnapshotError(
            f"{old.source} and {new.source} share no list to compare "
            f"(old has {sorted(old.lists)}, new has {sorted(new.lists)})"
        )
    a = {k: v for k, v in old.contracts().items() if k[0] in kinds}
    b = {k: v for k, v in new.contracts().items() if k[0] in kinds}
    items = []
    verdict = Verdict.PROCEED
    for (kind, name), changes in classify_maps(a, b, markers).items():
        decision = table.decide(c.kind for c in changes)
        items.append(ItemDiff(kind, name, changes, decision))
        if decision.verdict is Verdict.HOLD or (
            decision.verdict is Verdict.INCONCLUSIVE and verdict is Verdict.PROCEED
        ):
            verdict = decision.verdict
    return SnapshotDiff(items, compared, verdict)
