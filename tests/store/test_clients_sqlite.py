"""Client records on one box (SQLite in the state dir): `mcpward clients ...` changes what a
running gateway's records answer, without a restart; an unreadable row refuses its client."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.identity.client_records import ClientRecordsUnavailable
from mcpward.identity.consent import ConsentCeiling
from mcpward.store.clients import DB_NAME, SqliteClientRecords
from mcpward.store.factory import open_client_records, sqlite_context
from tests.http.gateway_harness import token_entry

UPSTREAMS = [{"id": "up", "command": "true"}]


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["clients", *args])
    return result.exit_code, result.output


def test_a_change_by_another_process_is_seen_without_reopening(tmp_path: Path) -> None:
    gateway = open_client_records(sqlite_context(tmp_path))  # what the HTTP front holds
    try:
        assert gateway.record("alice") is None
        writer = SqliteClientRecords(tmp_path)  # the CLI's own connection
        writer.change("alice", ceiling=ConsentCeiling.READ_ONLY)
        stored = gateway.record("alice")
        assert stored is not None and stored.ceiling is ConsentCeiling.READ_ONLY
        assert stored.roles is None  # not set: the config's roles stand
        writer.change("alice", roles=("dev",))
        stored = gateway.record("alice")
        assert stored is not None and (stored.roles, stored.ceiling) == (
            ("dev",),
            ConsentCeiling.READ_ONLY,
        )
        writer.change("alice", roles=None, ceiling=None)  # nothing left set: the row goes
        assert gateway.record("alice") is None and gateway.snapshot() == {}
        writer.change("alice", roles=())
        assert writer.reset("alice") and not writer.reset("alice")
        assert gateway.record("alice") is None
        writer.close()
    finally:
        gateway.close()


def test_an_unreadable_row_refuses_only_its_client(tmp_path: Path) -> None:
    records = SqliteClientRecords(tmp_path)
    records.change("good", ceiling=ConsentCeiling.FULL)
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("INSERT INTO client_records VALUES ('bad', '[\"not a role!\"]', 'full', 0)")
    with pytest.raises(ClientRecordsUnavailable, match="'bad' is unreadable"):
        records.record("bad")
    good = records.record("good")
    assert good is not None and good.ceiling is ConsentCeiling.FULL
    with pytest.raises(ClientRecordsUnavailable):
        records.change("bad", ceiling=ConsentCeiling.READ_ONLY)  # never re-stamped as valid
    assert records.reset("bad")
    assert records.record("bad") is None
    records.close()


def test_cli_set_list_reset(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "mcpward.yaml"
    front = {
        "kind": "http",
        "port": 8931,
        "tokens": [token_entry("t" * 32, "alice", "full", ["dev"])],
    }
    config.write_text(
        json.dumps({"version": 1, "front": front, "state_dir": str(state), "upstreams": UPSTREAMS}),
        encoding="utf-8",
    )
    code, out = cli("set-ceiling", "alice", "read_only", "--config", str(config))
    assert code == 0, out
    assert "alice: ceiling read_only; roles (config)" in out
    code, out = cli("set-roles", "bob", "ops", "qa", "--config", str(config))
    assert code == 0 and "bob is not in the config file" in out, out
    code, out = cli("list", "--config", str(config), "--json")
    assert code == 0, out
    rows = {row["client_id"]: row for row in json.loads(out)}
    assert rows["alice"]["roles"] == ["dev"] and rows["alice"]["consent_ceiling"] == "read_only"
    assert rows["alice"]["configured"] and rows["alice"]["stored"]["roles"] is None
    assert rows["bob"]["roles"] == ["ops", "qa"] and not rows["bob"]["configured"]
    code, out = cli("reset", "alice", "--config", str(config))
    assert code == 0 and "stored record dropped" in out, out
    code, out = cli("list", "--config", str(config))
    assert "alice: ceiling full; roles dev  [config]" in out, out
    assert cli("set-ceiling", "alice", "everything", "--state-dir", str(state))[0] == 2
    assert cli("set-roles", "alice", "bad role", "--state-dir", str(state))[0] == 2
