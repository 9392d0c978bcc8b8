"""`mcpward doctor` on real state directories and client configs at their default paths: what it
reports, what it asks to fix, and its exit code."""

from __future__ import annotations

import base64
import json
import os
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from mcpward.store.pins_sqlite import SqlitePinStore
from mcpward.wiring.clients import default_config_path
from tests.support import paths
from tests.wiring.support import Run, mcpward


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of our own: the clients' default paths point inside it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("MCPWARD_STATE_DIR", str(tmp_path / "state"))
    return home


def _state_with_store(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    SqlitePinStore(state).close()
    return state


def _claude_desktop(servers: dict[str, object]) -> Path:
    path = default_config_path("claude-desktop")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


def test_a_healthy_installation(home: Path, tmp_path: Path) -> None:
    _state_with_store(tmp_path)
    _claude_desktop({"echo": {"command": sys.executable, "args": ["server.py"]}})
    assert mcpward("wire", "claude-desktop").code == 0
    run = mcpward("doctor")
    assert run.code == 0, run.text
    assert "ok    state:" in run.stdout
    assert "ok    keys: 1 key file(s), each 0600 and yours" in run.stdout
    assert "0 upstream(s), 0 open hold(s)" in run.stdout
    assert "ok    client claude-desktop:" in run.stdout
    assert "1 server(s) behind mcpward, 0 not, 0 remote" in run.stdout
    assert "no config at" in run.stdout  # the other clients
    assert "Nothing needs fixing." in run.stdout


def test_open_permissions_are_to_be_fixed(home: Path, tmp_path: Path) -> None:
    state = _state_with_store(tmp_path)
    state.chmod(0o755)
    (state / "pins.key").chmod(0o644)
    run = mcpward("doctor")
    assert run.code == 1
    assert f"chmod 700 {state}" in run.stdout
    assert f"chmod 600 {state / 'pins.key'}" in run.stdout
    state.chmod(0o700)
    (state / "pins.key").chmod(0o600)
    assert mcpward("doctor").code == 0


def test_a_pin_store_without_its_key(home: Path, tmp_path: Path) -> None:
    state = _state_with_store(tmp_path)
    (state / "pins.key").unlink()
    run = mcpward("doctor")
    assert run.code == 1
    assert "its key" in run.stdout and "is missing" in run.stdout
    assert not (state / "pins.key").exists()  # doctor only looks


def test_a_damaged_key_file(home: Path, tmp_path: Path) -> None:
    state = _state_with_store(tmp_path)
    (state / "pins.key").write_bytes(b"short")
    run = mcpward("doctor")
    assert run.code == 1
    assert "holds 5 bytes, expected 32" in run.stdout


def test_unwired_servers_and_a_moved_gateway(home: Path, tmp_path: Path) -> None:
    gone = tmp_path / "old-venv" / "bin" / "mcpward"
    _claude_desktop(
        {
            "plain": {"command": sys.executable, "args": ["server.py"]},
            "stale": {"command": str(gone), "args": ["run", "--id", "stale", "--", "x"]},
        }
    )
    run = mcpward("doctor")
    assert run.code == 1
    assert f"stale starts {gone}, which is not there" in run.stdout
    assert "not behind mcpward: plain" in run.stdout
    assert "mcpward unwire claude-desktop && mcpward wire claude-desktop" in run.stdout


def test_node_for_wrapped_npm_servers(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claude_desktop(
        {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}
    )
    assert mcpward("wire", "claude-desktop").code == 0
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    run = mcpward("doctor")
    assert run.code == 1
    assert "'npx', which a wired server runs, is not on PATH" in run.stdout
    assert "install Node.js" in run.stdout

    node = paths.node22()
    bin_dir = tmp_path / "node-bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    (bin_dir / "npx").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "npx").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), str(empty)]))
    run = mcpward("doctor")
    assert "ok    runtime: Node 22" in run.stdout, run.stdout


def test_an_open_config_backup_is_to_be_fixed(home: Path, tmp_path: Path) -> None:
    _state_with_store(tmp_path)
    _claude_desktop({"echo": {"command": sys.executable, "env": {"TOKEN": "t0k3n-value"}}})
    assert mcpward("wire", "claude-desktop").code == 0
    (backup,) = (tmp_path / "state" / "wiring").glob("*.orig")
    backup.chmod(0o644)
    run = mcpward("doctor")
    assert run.code == 1
    assert f"chmod 600 {backup}" in run.stdout
    assert "t0k3n-value" not in run.stdout


def test_a_project_config_wired_with_config_file_is_checked(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project" / ".mcp.json"
    project.parent.mkdir()
    project.write_text(json.dumps({"mcpServers": {"db": {"command": sys.executable}}}))
    assert mcpward("wire", "claude-code", "--config-file", str(project)).code == 0
    run = mcpward("doctor")
    assert run.code == 0, run.text
    assert f"ok    client claude-code: {project}: 1 server(s) behind mcpward" in run.stdout


# -- the store a config names: a real PostgreSQL server (tests/conftest.py `pg_dsn`) ------------


def _pg_config(tmp_path: Path, keys: str = "") -> Path:
    """A fleet config whose DSN comes from $MCPWARD_TEST_PG_DSN; `keys`: more `keys:` lines."""
    from tests.store.pg import store_yaml

    (tmp_path / "state").mkdir(mode=0o700, exist_ok=True)
    (tmp_path / "state").chmod(0o700)
    config = tmp_path / "mcpward.yaml"
    config.write_text(
        "version: 1\nupstreams: [{id: none, kind: stdio, command: /bin/true}]\n"
        + store_yaml(tmp_path / "keys", tmp_path / "state")
        + keys
    )
    return config.resolve()


def _doctor_on(dsn: str, config: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    from tests.store.pg import DSN_ENV

    monkeypatch.setenv(DSN_ENV, dsn)
    run = mcpward("doctor", "--config", str(config))
    assert unquote(urlsplit(dsn).password or "") not in run.text  # never the DSN's password
    assert dsn not in run.text
    return run


def test_a_postgres_store_with_its_schema_current(
    home: Path, tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpward.store.postgres.migrations import code_version
    from tests.store.pg import pg_context

    pg_context(pg_dsn, tmp_path)
    run = _doctor_on(pg_dsn, _pg_config(tmp_path), monkeypatch)
    assert run.code == 0, run.text
    where = f"postgres://127.0.0.1:{urlsplit(pg_dsn).port}{urlsplit(pg_dsn).path}"
    assert (
        f"ok    store: {where} (store.dsn from env MCPWARD_TEST_PG_DSN) answers; "
        f"schema at version {code_version()}"
    ) in run.stdout
    assert not (tmp_path / "keys").exists()  # doctor only looks


def test_an_unmigrated_database_names_the_migrate_command(
    home: Path, tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.store.pg import pg_context

    pg_context(pg_dsn, tmp_path, migrated=False)
    config = _pg_config(tmp_path)
    run = _doctor_on(pg_dsn, config, monkeypatch)
    assert run.code == 1
    assert "FIX   store:" in run.stdout and "schema is at version 0" in run.stdout
    assert f"  - store: mcpward store migrate --config {config}\n" in run.stdout


def test_a_server_that_does_not_answer_is_reported_quickly(
    home: Path, tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.postgres import free_port

    dead = pg_dsn.replace(f":{urlsplit(pg_dsn).port}/", f":{free_port()}/")
    started = time.monotonic()
    run = _doctor_on(dead, _pg_config(tmp_path), monkeypatch)
    assert time.monotonic() - started < 5
    assert run.code == 1
    where = f"postgres://127.0.0.1:{urlsplit(dead).port}{urlsplit(dead).path}"
    assert f"FIX   store: {where}: " in run.stdout
    assert f"start the server at {where}, or correct store.dsn from env" in run.stdout


def test_an_unset_dsn_variable(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPWARD_TEST_PG_DSN", raising=False)
    run = mcpward("doctor", "--config", str(_pg_config(tmp_path)))
    assert run.code == 1
    assert "store.dsn: environment variable MCPWARD_TEST_PG_DSN is not set" in run.stdout
    assert "make store.dsn from env MCPWARD_TEST_PG_DSN readable here" in run.stdout


KEY_REFS = (
    "  pins: {env: DOCTOR_PINS}\n"
    "  ledger_hmac: [{env: DOCTOR_HMAC_2}, {env: DOCTOR_HMAC_1}]\n"
    "  signing: {env: DOCTOR_SIGNING}\n"
)


def test_key_refs_are_read_and_named_never_shown(
    home: Path, tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.store.pg import pg_context

    pg_context(pg_dsn, tmp_path)
    values = {name: secrets.token_hex(32) for name in ("DOCTOR_PINS", "DOCTOR_HMAC_2")}
    values["DOCTOR_SIGNING"] = base64.b64encode(secrets.token_bytes(31)).decode()
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DOCTOR_HMAC_1", raising=False)
    run = _doctor_on(pg_dsn, _pg_config(tmp_path, KEY_REFS), monkeypatch)
    assert run.code == 1
    assert "ok    keys: keys.pins (env DOCTOR_PINS): a 32-byte key" in run.stdout
    assert "ok    keys: keys.ledger_hmac[0] (env DOCTOR_HMAC_2): HMAC key " in run.stdout
    assert (
        "FIX   keys: keys.ledger_hmac[1]: environment variable DOCTOR_HMAC_1 is not set"
        in run.stdout
    )
    assert "FIX   keys: keys.signing (env DOCTOR_SIGNING) is not a usable key" in run.stdout
    assert "ok    store: postgres://" in run.stdout
    assert "missing" not in run.text  # no key file is expected in the keys dir
    assert not any(value in run.text for value in values.values())
    monkeypatch.setenv("DOCTOR_HMAC_1", values["DOCTOR_HMAC_2"])  # the same key twice
    monkeypatch.setenv("DOCTOR_SIGNING", secrets.token_hex(32))
    run = _doctor_on(pg_dsn, _pg_config(tmp_path, KEY_REFS), monkeypatch)
    assert run.code == 1
    assert "keys.ledger_hmac[1] is the same key as keys.ledger_hmac[0]" in run.stdout
    assert "ok    keys: keys.signing (env DOCTOR_SIGNING): signs as mcpward.local/" in run.stdout


def test_a_sqlite_store_whose_pins_key_is_a_ref_needs_no_key_file(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = secrets.token_bytes(32)
    monkeypatch.setenv("DOCTOR_PINS", key.hex())
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    SqlitePinStore(state, key=key).close()
    config = tmp_path / "mcpward.yaml"
    config.write_text(
        "version: 1\nupstreams: [{id: none, kind: stdio, command: /bin/true}]\n"
        f"state_dir: {state}\nkeys:\n  pins: {{env: DOCTOR_PINS}}\n"
    )
    run = mcpward("doctor", "--config", str(config))
    assert run.code == 0, run.text
    assert "ok    store: pin store" in run.stdout
    assert "ok    keys: keys.pins (env DOCTOR_PINS): a 32-byte key" in run.stdout
    assert not (state / "pins.key").exists()


def test_a_ledger_sealed_with_a_key_no_longer_configured_is_named(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from mcpward.evidence.chain import PendingEntry
    from mcpward.evidence.ledger import Ledger
    from mcpward.evidence.receipt import build_receipt
    from mcpward.evidence.settings import EvidencePaths
    from mcpward.secret_refs import SecretRef
    from tests.evidence.records import decision

    old, new, seed = (secrets.token_bytes(32) for _ in range(3))
    for name, key in (("DOCTOR_OLD", old), ("DOCTOR_NEW", new), ("DOCTOR_SEED", seed)):
        monkeypatch.setenv(name, key.hex())
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    SqlitePinStore(state).close()
    paths = EvidencePaths.resolve(state)
    written = replace(
        paths, hmac_refs=(SecretRef(env="DOCTOR_OLD"),), signing_ref=SecretRef(env="DOCTOR_SEED")
    )
    ledger = Ledger.open(written)
    ledger.append([PendingEntry.of_receipt(build_receipt(decision(0)), time.time())])
    ledger.close()

    def doctor(hmac: str) -> Run:
        config = tmp_path / "mcpward.yaml"
        config.write_text(
            "version: 1\nupstreams: [{id: none, kind: stdio, command: /bin/true}]\n"
            f"state_dir: {state}\n"
            f"keys:\n  ledger_hmac: {hmac}\n  signing: {{env: DOCTOR_SEED}}\n"
        )
        return mcpward("doctor", "--config", str(config))

    run = doctor("[{env: DOCTOR_NEW}]")
    assert run.code == 1, run.text
    assert "does not hold: the gateway refuses to start without it" in run.stdout
    assert "put that key back in keys.ledger_hmac" in run.stdout
    assert old.hex() not in run.text and new.hex() not in run.text
    run = doctor("[{env: DOCTOR_NEW}, {env: DOCTOR_OLD}]")  # rotated in, old one kept
    assert "ok    keys: keys.ledger_hmac[1] is key " in run.stdout, run.stdout
    assert "does not hold" not in run.stdout


def test_an_absolute_command_that_is_gone_is_not_called_off_path(
    home: Path, tmp_path: Path
) -> None:
    """`doctor` says an absolute command path does not exist, not that it is "not on PATH"."""
    gone = tmp_path / "venv" / "bin" / "mcp-server-gone"
    _claude_desktop({"srv": {"command": str(gone), "args": []}})
    assert mcpward("wire", "claude-desktop").code == 0
    run = mcpward("doctor")
    assert run.code == 1
    assert f"'{gone}', which a wired server runs, does not exist or cannot be run" in run.stdout
    assert "not on PATH" not in run.stdout.replace("mcpward is not on PATH", "")
    assert f"reinstall the server at {gone}" in run.stdout
