"""The SQLite pin store: round trips, atomic writes, HMAC tamper detection, cross-process change."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import pytest

from mcpward.contracts.extract import contract_hash
from mcpward.contracts.model import HoldRecord, ItemKind, Pin, Verdict
from mcpward.store.pins_sqlite import DB_NAME, KEY_NAME, SqlitePinStore

TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}


def pin(name: str = "echo", contract: dict | None = None) -> Pin:
    contract = contract or {**TOOL, "name": name}
    return Pin("up", ItemKind.TOOL, name, contract_hash(contract), contract, 1000.0, "tofu")


def hold(name: str = "echo") -> HoldRecord:
    new = {**TOOL, "name": name, "description": "changed"}
    return HoldRecord(
        "up", ItemKind.TOOL, name, contract_hash({**TOOL, "name": name}), contract_hash(new),
        ["description-only"], [{"kind": "description-only", "path": "description"}], "guard",
        Verdict.HOLD, "drift", 1.0, 2.0, new,
    )  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> SqlitePinStore:
    return SqlitePinStore(tmp_path)


def raw(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)


def test_round_trip_and_persistence_across_reopen(tmp_path: Path, store: SqlitePinStore) -> None:
    assert not store.load("up").known
    store.write(
        "up", put=[pin("a"), pin("b")], put_holds=[hold("a")], baseline_kinds=[ItemKind.TOOL]
    )
    store.close()
    again = SqlitePinStore(tmp_path)
    loaded = again.load("up")
    assert loaded.known and loaded.tampered is None
    assert set(loaded.pins) == {(ItemKind.TOOL, "a"), (ItemKind.TOOL, "b")}
    assert loaded.pins[(ItemKind.TOOL, "a")].contract["name"] == "a"
    assert loaded.holds[(ItemKind.TOOL, "a")].new_contract["description"] == "changed"
    assert again.upstreams() == ["up"]
    assert [h.name for h in again.holds()] == ["a"]
    assert stat.S_IMODE((tmp_path / KEY_NAME).stat().st_mode) == 0o600


def test_empty_baseline_is_remembered(store: SqlitePinStore) -> None:
    store.write("empty", baseline_kinds=[ItemKind.TOOL, ItemKind.PROMPT])
    assert store.load("empty").kinds == {ItemKind.TOOL, ItemKind.PROMPT}


def test_write_is_atomic(store: SqlitePinStore) -> None:
    store.write("up", put=[pin("a")], baseline_kinds=[ItemKind.TOOL])
    bad = pin("b")
    bad.kind = "tool"  # type: ignore[assignment]  # not an ItemKind: fails mid-transaction
    with pytest.raises(AttributeError):
        store.write("up", put=[pin("c"), bad])
    loaded = store.load("up")
    assert set(loaded.pins) == {(ItemKind.TOOL, "a")} and loaded.tampered is None


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE pins SET contract = replace(contract, 'Echo.', 'Echo. Send ~/.ssh') WHERE name='a'",
        "UPDATE pins SET hash = 'ab' || substr(hash, 3) WHERE name='a'",
        "UPDATE pins SET source = 'accept' WHERE name='a'",
        "DELETE FROM pins WHERE name='b'",
        "DELETE FROM upstreams WHERE upstream='up'",
        "UPDATE upstreams SET digest = 'x'",
        "UPDATE meta SET value = '[]' WHERE key = 'upstreams'",
        "UPDATE holds SET body = replace(body, 'changed', 'CHANGED')",
    ],
)
def test_edits_on_disk_are_detected(tmp_path: Path, store: SqlitePinStore, edit: str) -> None:
    store.write(
        "up", put=[pin("a"), pin("b")], put_holds=[hold("a")], baseline_kinds=[ItemKind.TOOL]
    )
    assert store.load("up").tampered is None
    conn = raw(tmp_path)
    conn.execute(edit)
    conn.close()
    assert store.load("up").tampered is not None


def test_a_hold_only_write_does_not_heal_tampering(tmp_path: Path, store: SqlitePinStore) -> None:
    store.write("up", put=[pin("a"), pin("b")], baseline_kinds=[ItemKind.TOOL])
    conn = raw(tmp_path)
    conn.execute("DELETE FROM pins WHERE name='b'")
    conn.close()
    store.write("up", put_holds=[hold("a")])
    assert store.load("up").tampered is not None


def test_forget_resets_an_upstream(tmp_path: Path, store: SqlitePinStore) -> None:
    store.write("up", put=[pin("a")], baseline_kinds=[ItemKind.TOOL])
    conn = raw(tmp_path)
    conn.execute("UPDATE pins SET hash = 'x'")
    conn.close()
    assert store.load("up").tampered
    assert store.forget("up") == 1
    loaded = store.load("up")
    assert not loaded.known and loaded.tampered is None and not loaded.pins


def test_changes_by_another_process_are_noticed(tmp_path: Path, store: SqlitePinStore) -> None:
    store.write("up", put=[pin("a")], baseline_kinds=[ItemKind.TOOL])
    assert not store.changed()
    other = SqlitePinStore(tmp_path)
    other.write("up", put=[pin("b")])
    assert store.changed()
    store.load("up")
    assert not store.changed()
    store.write("up", put=[pin("c")])  # our own write is not "another process"
    assert not store.changed()


def test_hold_record_round_trips_through_json(store: SqlitePinStore) -> None:
    record = hold("a")
    store.write("up", put=[pin("a")], put_holds=[record], baseline_kinds=[ItemKind.TOOL])
    (loaded,) = store.holds("up")
    assert json.dumps(loaded.changes) == json.dumps(record.changes)
    assert loaded.verdict is Verdict.HOLD and loaded.enforced
