"""Wire and unwire one client config file: plan (read, edit, verify, diff), then apply atomically.

A plan is checked before anything is written: the edited text must parse to exactly the original
document with only the wired entries' command and args changed.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpward.wiring.backup import WiringMarker, WiringStore, new_marker, sha256
from mcpward.wiring.clients import ClientFormat
from mcpward.wiring.document import ConfigDocument, ConfigRefused, parse_document, read_document
from mcpward.wiring.entries import EntryKind, ServerEntry
from mcpward.wiring.files import replace_atomically
from mcpward.wiring.launcher import Launcher, upstream_id_for
from mcpward.wiring.masking import masked_diff
from mcpward.wiring.rewrite import (
    Edit,
    UnwireConflict,
    WiredRecord,
    apply_edits,
    original_args,
    unwire_entry,
    wire_entry,
)


@dataclass(slots=True)
class WirePlan:
    client: ClientFormat
    before: ConfigDocument
    after: ConfigDocument
    wired: list[WiredRecord]  # newly wired by this plan
    marker: WiringMarker | None  # the live marker from an earlier wire, if any
    diff: str

    @property
    def changed(self) -> bool:
        return self.after.raw != self.before.raw

    def entries(self, kind: EntryKind) -> list[ServerEntry]:
        return [e for e in self.before.entries if e.kind == kind]


@dataclass(slots=True)
class UnwirePlan:
    client: ClientFormat
    path: Path
    current: bytes | None  # None: the file is gone (only with --force)
    restored: bytes
    marker: WiringMarker
    diff: str
    gone: list[str] = field(default_factory=list)  # wired entries since removed by hand
    forced: bool = False


def _set_entry(data: dict[str, Any], record: WiredRecord) -> None:
    node: Any = data
    for key in record.where:
        node = node[key]
    node[record.name]["command"] = json.loads(record.command_after)
    node[record.name]["args"] = list(record.args_after)


def _verify(before: ConfigDocument, after: ConfigDocument, wired: list[WiredRecord]) -> None:
    """The edited file must mean exactly the original with the wired entries replaced."""
    expected = copy.deepcopy(before.root.value)
    for record in wired:
        _set_entry(expected, record)
    if after.root.value != expected:
        raise ConfigRefused(f"{before.path}: the edit did not produce the expected document")


def _live_records(doc: ConfigDocument, marker: WiringMarker | None) -> list[WiredRecord]:
    """The marker's records whose entries are still exactly as wired."""
    if marker is None:
        return []
    live = []
    for record in marker.records:
        node = doc.find(record.where, record.name)
        if node is None:
            continue
        try:
            unwire_entry(doc.text, node, record)
        except UnwireConflict:
            continue
        live.append(record)
    return live


def _wired_id(entry: ServerEntry) -> str | None:
    args = entry.args
    return args[args.index("--id") + 1] if "--id" in args[:-1] else None


def plan_wire(client: ClientFormat, path: Path, launcher: Launcher, store: WiringStore) -> WirePlan:
    before = read_document(path, client)
    marker = store.load(client.name, path)
    live = _live_records(before, marker)
    taken = {r.upstream_id.lower() for r in live}
    taken |= {i.lower() for e in before.entries if (i := _wired_id(e))}
    edits: list[Edit] = []
    wired: list[WiredRecord] = []
    for entry in before.entries:
        if entry.kind == EntryKind.STDIO:
            entry_edits, record = wire_entry(
                before.text, entry, launcher, upstream_id_for(entry.name, taken)
            )
            edits.extend(entry_edits)
            wired.append(record)
    after = parse_document(path, apply_edits(before.text, edits).encode("utf-8"), client)
    _verify(before, after, wired)
    if marker is not None:
        marker.records = live
    diff = masked_diff(before, after, "wired") if wired else ""
    return WirePlan(client, before, after, wired, marker if live else None, diff)


def _refuse_if_changed(path: Path, expected: bytes | None) -> None:
    """Between planning and writing, the file must not change (None: it must stay absent)."""
    try:
        current: bytes | None = path.read_bytes()
    except FileNotFoundError:
        current = None
    except OSError as exc:
        raise ConfigRefused(f"{path}: cannot be read again ({exc.strerror})") from None
    if current != expected:
        raise ConfigRefused(f"{path}: changed while mcpward was editing it; nothing written")


def apply_wire(plan: WirePlan, store: WiringStore) -> Path:
    """Backup and marker first, then the config file; returns the backup's path."""
    path = plan.before.path
    _refuse_if_changed(path, plan.before.raw)
    previous = plan.marker
    if previous is None:
        marker = new_marker(plan.client.name, path, plan.before.raw, plan.after.raw)
        original: bytes | None = plan.before.raw
    else:
        marker = copy.copy(previous)
        marker.wired_sha256 = sha256(plan.after.raw)
        # edited by someone else since our last write: unwiring can no longer give the backup back
        marker.pristine = previous.pristine and sha256(plan.before.raw) == previous.wired_sha256
        original = None
    marker.records = [*(previous.records if previous else []), *plan.wired]
    backup = store.save(marker, path, original)
    try:
        replace_atomically(path, plan.after.raw)
    except BaseException:
        if previous is None:
            store.remove(plan.client.name, path)
        else:
            store.save(previous, path, None)
        raise
    return backup


def plan_unwire(
    client: ClientFormat, path: Path, store: WiringStore, *, force: bool = False
) -> UnwirePlan:
    marker = store.load(client.name, path)
    if marker is None:
        raise ConfigRefused(
            f"{path}: mcpward has no record of wiring this file (nothing in {store.directory}); "
            "entries that run `mcpward run` were added by hand: edit them by hand"
        )
    original = store.backup(client.name, path, marker)
    try:
        current = read_document(path, client)
    except ConfigRefused:
        if not force:
            raise
        return _forced(client, path, original, marker)
    edits: list[Edit] = []
    present: list[WiredRecord] = []
    gone: list[str] = []
    conflicts: list[str] = []
    for record in marker.records:
        node = current.find(record.where, record.name)
        if node is None:
            gone.append(record.name)
            continue
        present.append(record)
        try:
            edits.extend(unwire_entry(current.text, node, record))
        except UnwireConflict as exc:
            conflicts.append(str(exc))
    if conflicts:
        if force:
            return _forced(client, path, original, marker)
        raise ConfigRefused(
            f"{path}: {'; '.join(conflicts)}. Unwiring would have to guess and could lose "
            "your edits, so nothing was written. Edit the entry by hand, or run "
            f"`mcpward unwire {client.name} --force` to restore the backup taken before wiring "
            "(this discards every change made to the file since)"
        )
    after = parse_document(path, apply_edits(current.text, edits).encode("utf-8"), client)
    _verify_unwired(after, present)
    untouched = marker.pristine and sha256(current.raw) == marker.wired_sha256
    if untouched and after.raw != original:
        raise ConfigRefused(
            f"{path}: undoing the recorded edits would not give back the backup byte for byte; "
            f"nothing written (`mcpward unwire {client.name} --force` restores the backup)"
        )
    diff = masked_diff(current, after, "unwired")
    return UnwirePlan(client, path, current.raw, after.raw, marker, diff, gone)


def _verify_unwired(doc: ConfigDocument, records: list[WiredRecord]) -> None:
    """Each entry that was wired (and is still there) holds its original command and args."""
    for record in records:
        node = doc.find(record.where, record.name)
        if node is None:
            raise ConfigRefused(f"{doc.path}: unwiring lost server {record.name!r}")
        value = node.value
        if value.get("command") != json.loads(record.command_before) or value.get(
            "args"
        ) != original_args(record):
            raise ConfigRefused(
                f"{doc.path}: unwiring {record.name!r} would not restore its command and args; "
                "nothing written"
            )


def _forced(client: ClientFormat, path: Path, original: bytes, marker: WiringMarker) -> UnwirePlan:
    try:
        current: bytes | None = path.read_bytes()
    except FileNotFoundError:
        current = None
    except OSError as exc:
        raise ConfigRefused(f"{path}: cannot be read ({exc.strerror})") from None
    return UnwirePlan(client, path, current, original, marker, "", forced=True)


def apply_unwire(plan: UnwirePlan, store: WiringStore) -> None:
    _refuse_if_changed(plan.path, plan.current)
    replace_atomically(plan.path, plan.restored)
    store.remove(plan.client.name, plan.path)
