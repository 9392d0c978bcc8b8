"""`mcpward doctor` on real state directories and client configs at their default paths: what it
reports, what it asks to fix, and its exit code."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcpward.store.pins_sqlite import SqlitePinStore
from mcpward.wiring.clients import default_config_path
from tests.support import paths
from tests.wiring.support import mcpward


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
