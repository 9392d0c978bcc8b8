"""The review console on a fleet's PostgreSQL store: the holds page shows the shared hold, an
accept re-pins in the database and records the review in the fleet's ledger, which verifies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from starlette.testclient import TestClient

from mcpward.cli.store_copy import copy_store
from mcpward.console.app import ConsoleSettings, create_console_app
from mcpward.console.auth import AdminAuth
from mcpward.contracts.extract import contract_hash
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.source import LedgerSource
from mcpward.store.factory import open_pin_store, sqlite_context
from tests.console.state import ADMIN_TOKEN, NEW_TOOL, make_state
from tests.store.pg import pg_context


def test_console_reviews_a_hold_in_the_fleet_store(pg_dsn: str, tmp_path: Path) -> None:
    box = tmp_path / "box"
    make_state(box)  # a hold on files/read_file, a few held calls in a SQLite ledger
    fleet = dataclasses.replace(pg_context(pg_dsn, tmp_path / "fleet"), config_path=None)
    lines = copy_store(sqlite_context(box), fleet)
    assert any("1 hold(s)" in line for line in lines), lines
    evidence = EvidencePaths.resolve(fleet.state_dir, None, fleet.keys_dir)
    settings = ConsoleSettings(fleet.state_dir, evidence, AdminAuth(ADMIN_TOKEN), store=fleet)
    bearer = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_console_app(settings), follow_redirects=False) as client:
        page = client.get("/holds", headers=bearer)
        assert page.status_code == 200 and "read_file" in page.text
        done = client.post(
            "/holds/review",
            headers=bearer,
            data={"action": "accept", "upstream": "files", "item_kind": "tool",
                  "item": "read_file", "expected_hash": contract_hash(NEW_TOOL),
                  "reason": "reviewed"},
        )  # fmt: skip
        assert done.status_code == 303, done.text
        assert "postgres://" in client.get("/ledger", headers=bearer).text
    store = open_pin_store(fleet, listen=False)
    try:
        assert store.holds() == []
        assert store.load("files").pins[next(iter(store.load("files").pins))].hash == (
            contract_hash(NEW_TOOL)
        )
    finally:
        store.close()
    report = LedgerSource(evidence, fleet).verify()
    assert report.ok, report.message
    assert report.entries >= 4  # the copied receipts and the review
