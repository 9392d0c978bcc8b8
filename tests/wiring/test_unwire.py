"""unwire after the file was edited: user edits elsewhere are kept; an edited wired entry is
refused unless --force (which restores the backup); re-wiring after a hand-added server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpward.wiring.entries import EntryKind
from tests.wiring.support import DATA, FIXTURES, copy_fixture, kinds, mcpward


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("MCPWARD_STATE_DIR", str(state))
    return state


def test_edits_elsewhere_are_kept_when_unwiring(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["claude-code"], tmp_path)
    original = path.read_text()
    assert mcpward("wire", "claude-code", "--config-file", str(path)).code == 0
    # Claude Code rewrites its counters in the same file while running
    path.write_text(path.read_text().replace('"numStartups": 42', '"numStartups": 43'))
    run = mcpward("unwire", "claude-code", "--config-file", str(path))
    assert run.code == 0, run.text
    assert path.read_text() == original.replace('"numStartups": 42', '"numStartups": 43')


def test_an_edited_wired_entry_is_refused_then_forced(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["cursor"], tmp_path)
    original = path.read_bytes()
    assert mcpward("wire", "cursor", "--config-file", str(path)).code == 0
    data = json.loads(path.read_text())
    data["mcpServers"]["server-name"]["args"].append("--verbose")
    edited = json.dumps(data, indent=2).encode()
    path.write_bytes(edited)

    refused = mcpward("unwire", "cursor", "--config-file", str(path))
    assert refused.code == 2
    assert "server 'server-name' was changed after it was wired" in refused.stderr
    assert "`mcpward unwire cursor --force`" in refused.stderr  # names the client
    assert str(path) in refused.stderr
    assert path.read_bytes() == edited

    forced = mcpward("unwire", "cursor", "--config-file", str(path), "--force")
    assert forced.code == 0, forced.text
    assert path.read_bytes() == original


def test_rewire_after_a_server_was_added_by_hand(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["claude-desktop"], tmp_path)
    assert mcpward("wire", "claude-desktop", "--config-file", str(path)).code == 0
    sqlite = '\n    "sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"]},'
    path.write_text(path.read_text().replace('"mcpServers": {', '"mcpServers": {' + sqlite, 1))

    run = mcpward("wire", "claude-desktop", "--config-file", str(path))
    assert run.code == 0, run.text
    assert "wire     sqlite" in run.stdout
    assert "already  filesystem" in run.stdout
    assert all(k == EntryKind.WIRED for k in kinds("claude-desktop", path).values())

    undone = mcpward("unwire", "claude-desktop", "--config-file", str(path))
    assert undone.code == 0, undone.text
    # every wiring undone, the hand-added server kept as the user wrote it
    original = (DATA / FIXTURES["claude-desktop"]).read_text()
    assert path.read_text() == original.replace('"mcpServers": {', '"mcpServers": {' + sqlite, 1)


def test_a_removed_wired_server_is_reported_as_gone(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["cursor"], tmp_path)
    assert mcpward("wire", "cursor", "--config-file", str(path)).code == 0
    data = json.loads(path.read_text())
    del data["mcpServers"]["python-tool"]
    path.write_text(json.dumps(data, indent=2))
    run = mcpward("unwire", "cursor", "--config-file", str(path))
    assert run.code == 0, run.text
    assert "gone     python-tool" in run.stdout
    assert kinds("cursor", path)["server-name"] == EntryKind.STDIO


def test_unwire_without_a_record_is_refused(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["windsurf"], tmp_path)
    run = mcpward("unwire", "windsurf", "--config-file", str(path))
    assert run.code == 2
    assert "no record of wiring this file" in run.stderr


def test_a_tampered_backup_is_refused(tmp_path: Path, _state: Path) -> None:
    path = copy_fixture(FIXTURES["windsurf"], tmp_path)
    assert mcpward("wire", "windsurf", "--config-file", str(path)).code == 0
    (backup,) = (_state / "wiring").glob("*.orig")
    backup.write_bytes(backup.read_bytes() + b" ")
    wired = path.read_bytes()
    run = mcpward("unwire", "windsurf", "--config-file", str(path), "--force")
    assert run.code == 2
    assert "does not match its recorded SHA-256" in run.stderr
    assert path.read_bytes() == wired


@pytest.mark.parametrize("client", ["claude-code", "claude-desktop"])
def test_unwire_after_the_client_reformatted_the_file(client: str, tmp_path: Path) -> None:
    """Claude Code rewrites ~/.claude.json as JSON.stringify(data, null, 2): same values, other
    layout. Unwiring then removes the wrapped values and keeps the client's layout."""
    path = copy_fixture(FIXTURES[client], tmp_path)
    original = json.loads(path.read_text())
    if client == "claude-desktop":  # an entry without args: wiring added the member
        original["mcpServers"]["bare"] = {"command": "mcp-server-time"}
        path.write_text(json.dumps(original))
    assert mcpward("wire", client, "--config-file", str(path)).code == 0
    path.write_text(json.dumps(json.loads(path.read_text()), indent=2))
    run = mcpward("unwire", client, "--config-file", str(path))
    assert run.code == 0, run.text
    assert json.loads(path.read_text()) == original
    assert path.read_text() == json.dumps(original, indent=2)


def test_force_recreates_a_deleted_config(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["cursor"], tmp_path)
    original = path.read_bytes()
    assert mcpward("wire", "cursor", "--config-file", str(path)).code == 0
    path.unlink()
    refused = mcpward("unwire", "cursor", "--config-file", str(path))
    assert refused.code == 2 and "no such file" in refused.stderr
    forced = mcpward("unwire", "cursor", "--config-file", str(path), "--force")
    assert forced.code == 0, forced.text
    assert path.read_bytes() == original
