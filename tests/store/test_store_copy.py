"""`mcpward store copy`: a single-box SQLite state with a few hundred receipts, held pins, a
revoked token and a client record, copied into PostgreSQL; the copy verifies, the source is
unchanged, and a gateway on the copy holds the same contracts and refuses the same token. Onto a
target whose keys are SecretRefs: the source's keys are checked, not written, and the copied
client records are read back (a record changed on the way fails the copy)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from mcpward.cli.store_copy import CopyError, copy_store
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.settings import EvidencePaths
from mcpward.identity.client_records import StoredRecord
from mcpward.identity.consent import ConsentCeiling
from mcpward.secret_refs import SecretRef
from mcpward.store.clients import SqliteClientRecords
from mcpward.store.factory import StoreContext, open_client_records, sqlite_context
from mcpward.store.postgres.clients import PostgresClientRecords
from tests.evidence.test_ledger_key_refs import entries
from tests.store.fleet import TOKEN, Replica, cli, held_data, replica_config, running, write_control
from tests.store.pg import pg_context

pytestmark = pytest.mark.asyncio
CALLS = 300
HOLD_CODE = -32010


async def call(replica: Replica) -> tuple[bool, dict[str, Any] | None]:
    """(passed, -32010 data) of one transfer call through this replica, on a fresh session."""
    async with replica.client() as session:
        await session.list_tools()
        try:
            result = await session.call_tool("transfer", {"amount": 5, "memo": "fleet"})
        except MCPError as exc:
            if exc.error.code != HOLD_CODE:
                raise
            return False, held_data(exc)
    assert not result.is_error, result
    return True, None


async def initialize_status(replica: Replica) -> int:
    """The HTTP status of a bare `initialize` with the client's token (401 once revoked)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "fleet", "version": "1"}},
    }  # fmt: skip
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(replica.url, json=body, headers=headers)
    return response.status_code


def _digests(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


async def test_copy_sqlite_state_into_postgres_and_run_on_it(pg_dsn: str, tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    write_control(control, 0)
    box = replica_config(tmp_path, "box", None, control, postgres=False)
    with running([box], pg_dsn):
        async with box.client() as session:
            for index in range(CALLS):
                result = await session.call_tool("transfer", {"amount": index, "memo": "copy"})
                assert not result.is_error
        write_control(control, 1)
        passed, held = await call(box)
        assert not passed and held is not None
        # The prompt and the resource drifted too: list them, so that their holds are recorded
        # by these reads and not by whichever background read happens to finish first.
        async with box.client() as session:
            for listing in (session.list_prompts, session.list_resources):
                with contextlib.suppress(MCPError):  # a drifted list is withheld (-32010)
                    await listing()
    cli(pg_dsn, "token", "revoke", "--config", str(box.config), "sha256:" + "ab" * 32)
    cli(pg_dsn, "clients", "set-ceiling", "other-client", "read_only", "--config", str(box.config))
    box_holds = json.loads(cli(pg_dsn, "holds", "--config", str(box.config), "--json").stdout)
    assert {h["name"] for h in box_holds} == {"transfer", "greet", "res://ledger"}
    source_state = tmp_path / "box" / "state"
    before = _digests(source_state)

    fleet = replica_config(tmp_path, "fleet", tmp_path / "fleet-keys", control)
    refused = cli(pg_dsn, "store", "copy", "--from-config", str(box.config),
                  "--to-config", str(fleet.config), check=False)  # fmt: skip
    assert refused.returncode == 1 and "store migrate --config" in refused.stderr
    cli(pg_dsn, "store", "migrate", "--config", str(fleet.config))
    copied = cli(pg_dsn, "store", "copy", "--from-config", str(box.config),
                 "--to-config", str(fleet.config))  # fmt: skip
    assert "3 hold(s)" in copied.stderr and "token revocations: 1" in copied.stderr
    assert "client records: 1 (read back" in copied.stderr, copied.stderr
    assert "ledger verify on the target: ok" in copied.stderr, copied.stderr
    assert _digests(source_state) == before  # the source is only read

    verified = json.loads(
        cli(pg_dsn, "ledger", "verify", "--config", str(fleet.config), "--json").stdout
    )
    assert verified["state"] == "ok" and verified["entries"] >= CALLS, verified
    fleet_holds = json.loads(cli(pg_dsn, "holds", "--config", str(fleet.config), "--json").stdout)
    assert fleet_holds == box_holds
    rows = cli(pg_dsn, "clients", "list", "--config", str(fleet.config), "--json").stdout
    other = {row["client_id"]: row for row in json.loads(rows)}["other-client"]
    assert other["stored"]["consent_ceiling"] == "read_only" and not other.get("refused")
    again = cli(pg_dsn, "store", "copy", "--from-config", str(box.config),
                "--to-config", str(fleet.config), check=False)  # fmt: skip
    assert again.returncode == 1 and "copy only into a new store" in again.stderr

    with running([fleet], pg_dsn):
        passed, held_again = await call(fleet)
        assert not passed and held_again is not None
        assert held_again["new_hash"] == held["new_hash"]
        assert f"--config {fleet.config}" in held_again["accept"]
        assert await initialize_status(fleet) == 200


def _box_with_a_ledger_and_client_records(state: Path) -> EvidencePaths:
    """A single box's state: a signed ledger (key files in the state dir) and two records."""
    paths = EvidencePaths.resolve(state)
    ledger = Ledger.open(paths)
    ledger.append(entries(5))
    ledger.checkpoint()
    ledger.close()
    records = SqliteClientRecords(state)
    records.change("other-client", ceiling=ConsentCeiling.READ_ONLY)
    records.change("fleet-client", roles=("reader", "auditor"))
    records.close()
    return paths


def _as_base64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


async def test_copy_onto_key_refs_checks_the_keys_and_reads_client_records_back(
    postgres_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target gives every key by SecretRef: nothing is written to its keys dir, the source's
    keys must be the target's, and the copied client records are read back MAC-checked."""
    source_paths = _box_with_a_ledger_and_client_records(tmp_path / "box")
    source = sqlite_context(tmp_path / "box")
    (hmac_file,) = source_paths.keys.glob("hmac-*.key")
    monkeypatch.setenv("MCPWARD_TEST_HMAC", base64.b64encode(secrets.token_bytes(32)).decode())
    monkeypatch.setenv("MCPWARD_TEST_SIGNING", _as_base64(source_paths.keys / "signing.key"))
    monkeypatch.setenv("MCPWARD_TEST_PINS", secrets.token_hex(32))

    def target(name: str) -> StoreContext:
        context = pg_context(postgres_cluster.create_database(f"copy_{name}"), tmp_path / name)
        return replace(
            context,
            config_path=None,
            pins_ref=SecretRef(env="MCPWARD_TEST_PINS"),
            hmac_refs=(SecretRef(env="MCPWARD_TEST_HMAC"),),
            signing_ref=SecretRef(env="MCPWARD_TEST_SIGNING"),
        )

    first = target("a")
    with pytest.raises(CopyError, match=rf"lack the source's key\(s\) {hmac_file.stem[5:]}"):
        copy_store(source, first)

    monkeypatch.setenv("MCPWARD_TEST_HMAC", _as_base64(hmac_file))
    real = PostgresClientRecords.import_records

    def widened(self: PostgresClientRecords, records: Sequence[StoredRecord]) -> int:
        return real(self, [replace(r, ceiling=ConsentCeiling.FULL) for r in records])

    monkeypatch.setattr(PostgresClientRecords, "import_records", widened)
    with pytest.raises(CopyError, match="copied client records do not verify"):
        copy_store(source, first)
    monkeypatch.setattr(PostgresClientRecords, "import_records", real)

    second = target("b")
    lines = copy_store(source, second)
    assert "client records: 2 (read back from the target, each MAC checked)" in lines
    assert "ledger verify on the target: ok" in lines[-1], lines
    assert not second.keys_dir.exists()
    copied = open_client_records(second, listen=False)
    try:
        other = copied.record("other-client")
        fleet = copied.record("fleet-client")
    finally:
        copied.close()
    assert other is not None and other.ceiling is ConsentCeiling.READ_ONLY and other.roles is None
    assert fleet is not None and fleet.roles == ("reader", "auditor") and fleet.ceiling is None
