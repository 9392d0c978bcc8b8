"""Wiring as text edits: each stdio entry's command and the head of its args are spliced in place.

Everything else in the file (comments, layout, key order) is untouched, and every edit is recorded
so that unwiring removes exactly what wiring inserted.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from mcpward.wiring.entries import ServerEntry
from mcpward.wiring.jsonc import Node
from mcpward.wiring.launcher import Launcher

ArgsMode = Literal["prefix", "empty", "member"]


@dataclass(frozen=True, slots=True)
class Edit:
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class WiredRecord:
    """What wiring changed in one entry, exactly (kept in the wiring marker)."""

    where: tuple[str, ...]
    name: str
    upstream_id: str
    command_before: str  # the original command value's JSON text
    command_after: str
    args_mode: ArgsMode  # prefix: before the first arg; empty: inside `[]`; member: new "args"
    inserted: str
    args_after: tuple[str, ...]  # the entry's full args once wired

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["where"], data["args_after"] = list(self.where), list(self.args_after)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WiredRecord:
        return cls(
            where=tuple(data["where"]),
            name=str(data["name"]),
            upstream_id=str(data["upstream_id"]),
            command_before=str(data["command_before"]),
            command_after=str(data["command_after"]),
            args_mode=data["args_mode"],
            inserted=str(data["inserted"]),
            args_after=tuple(data["args_after"]),
        )


class UnwireConflict(ValueError):
    """An entry no longer holds what wiring wrote: removing it would need a guess."""


def apply_edits(text: str, edits: list[Edit]) -> str:
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in itertools.pairwise(ordered):
        if before.end > after.start:
            raise ValueError("overlapping edits")
    parts: list[str] = []
    cursor = 0
    for edit in ordered:
        parts += (text[cursor : edit.start], edit.text)
        cursor = edit.end
    parts.append(text[cursor:])
    return "".join(parts)


def _dump(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _separator(text: str, array: Node) -> str:
    """`, ` in a one-line array; a newline and the first element's indent in a multi-line one."""
    lead = text[array.start + 1 : array.items[0].start]
    if "\n" not in lead:
        return ", "
    newline = "\r\n" if "\r\n" in lead else "\n"
    last_line = lead[lead.rfind("\n") + 1 :]
    indent = last_line[: len(last_line) - len(last_line.lstrip(" \t"))]
    return "," + newline + indent


def _args_member(text: str, entry: ServerEntry, items: list[str]) -> str:
    """A new `"args": [...]` member after the command, on its own line if the object is."""
    command = entry.node.member("command")
    assert command is not None
    line_start = text.rfind("\n", 0, command.key_start) + 1
    indent = text[line_start : command.key_start]
    array = "[" + ", ".join(_dump(i) for i in items) + "]"
    if line_start > 0 and not indent.strip():
        newline = "\r\n" if text[line_start - 2 : line_start] == "\r\n" else "\n"
        return "," + newline + indent + '"args": ' + array
    return ', "args": ' + array


def wire_entry(
    text: str, entry: ServerEntry, launcher: Launcher, upstream_id: str
) -> tuple[list[Edit], WiredRecord]:
    """The edits that put one stdio entry behind `mcpward run`, and their record."""
    command = entry.node.get("command")
    assert command is not None
    head = launcher.wrap(upstream_id, entry.env_names, [entry.command])
    args_after = (*head, *entry.args)
    command_after = _dump(launcher.command)
    edits = [Edit(command.start, command.end, command_after)]
    args = entry.node.get("args")
    mode: ArgsMode
    if args is None:
        mode, inserted, at = "member", _args_member(text, entry, head), command.end
    elif args.items:
        sep = _separator(text, args)
        mode, inserted, at = "prefix", sep.join(_dump(i) for i in head) + sep, args.items[0].start
    else:
        mode, inserted, at = "empty", ", ".join(_dump(i) for i in head), args.start + 1
    edits.append(Edit(at, at, inserted))
    record = WiredRecord(
        where=entry.where,
        name=entry.name,
        upstream_id=upstream_id,
        command_before=text[command.start : command.end],
        command_after=command_after,
        args_mode=mode,
        inserted=inserted,
        args_after=args_after,
    )
    return edits, record


def original_args(record: WiredRecord) -> list[str] | None:
    """The entry's args before wiring (None: it had no `args`)."""
    if record.args_mode == "member":
        return None
    return list(record.args_after[record.args_after.index("--") + 2 :])


def unwire_entry(text: str, node: Node, record: WiredRecord) -> list[Edit]:
    """The edits that undo `record` in the entry as it is now; UnwireConflict if it changed.

    Exactly what was inserted is removed when it is still there; if the client reformatted
    the file (same values, other layout), the inserted values are removed instead.
    """
    command = node.get("command")
    args = node.get("args")
    if (
        command is None
        or command.value != json.loads(record.command_after)
        or args is None
        or tuple(args.value) != record.args_after
    ):
        raise UnwireConflict(f"server {record.name!r} was changed after it was wired")
    restore = Edit(command.start, command.end, record.command_before)
    if record.args_mode == "member":
        at = command.end
    elif record.args_mode == "empty":
        at = args.start + 1
    else:
        at = args.items[0].start
    if text[command.start : command.end] == record.command_after and (
        text[at : at + len(record.inserted)] == record.inserted
    ):
        return [restore, Edit(at, at + len(record.inserted), "")]
    return [restore, _remove_head(text, node, args, record)]


def _remove_head(text: str, node: Node, args: Node, record: WiredRecord) -> Edit:
    """Remove the wrapped head from a reformatted entry: the values, not the exact text."""
    if record.args_mode == "member":
        names = [m.key for m in node.members]
        command = node.get("command")
        assert command is not None
        between = text[command.end : node.members[names.index("args")].key_start]
        if (
            names.index("args") != names.index("command") + 1
            or between.strip(" \t\r\n,")
            or between.count(",") != 1
        ):
            raise UnwireConflict(f"server {record.name!r} was rearranged after it was wired")
        return Edit(command.end, args.end, "")
    head = record.args_after.index("--") + 2
    if len(args.items) > head:
        return Edit(args.items[0].start, args.items[head].start, "")
    return Edit(args.items[0].start, args.items[head - 1].end, "")
