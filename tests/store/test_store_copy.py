"""`mcpward store copy`: a single-box SQLite state with a few hundred receipts, held pins and a
revoked token, copied into PostgreSQL; the copy verifies, the source is unchanged, and a gateway on
the copy holds the same contracts and refuses the same token."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.store.fleet import cli, replica_config, running, write_control
from tests.store.test_fleet_replicas import call, initialize_status

pytestmark = pytest.mark.asyncio
CALLS = 300


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
    cli(pg_dsn, "token", "revoke", "--config", str(box.config), "sha256:" + "ab" * 32)
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
    assert "ledger verify on the target: ok" in copied.stderr, copied.stderr
    assert _digests(source_state) == before  # the source is only read

    verified = json.loads(
        cli(pg_dsn, "ledger", "verify", "--config", str(fleet.config), "--json").stdout
    )
    assert verified["state"] == "ok" and verified["entries"] >= CALLS, verified
    fleet_holds = json.loads(cli(pg_dsn, "holds", "--config", str(fleet.config), "--json").stdout)
    assert fleet_holds == box_holds
    again = cli(pg_dsn, "store", "copy", "--from-config", str(box.config),
                "--to-config", str(fleet.config), check=False)  # fmt: skip
    assert again.returncode == 1 and "copy only into a new store" in again.stderr

    with running([fleet], pg_dsn):
        passed, held_again = await call(fleet)
        assert not passed and held_again is not None
        assert held_again["new_hash"] == held["new_hash"]
        assert f"--config {fleet.config}" in held_again["accept"]
        assert await initialize_status(fleet) == 200
