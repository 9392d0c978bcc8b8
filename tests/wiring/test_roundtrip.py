"""wire -> wire again (no change) -> unwire (byte-identical) on each client's documented format,
with the diff masked, comments kept, env passed on by name, and remote entries left alone."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from mcpward.wiring.clients import CLIENTS
from mcpward.wiring.document import read_document
from mcpward.wiring.entries import EntryKind
from mcpward.wiring.launcher import MODULE_PREFIX, Launcher, find_launcher, is_wired
from tests.wiring.support import FIXTURES, SECRETS, copy_fixture, kinds, mcpward

EXPECTED = {
    "claude-desktop": {
        "wired": {"filesystem", "github", "time"},
        "remote": set(),
    },
    "claude-code": {"wired": {"sequential-thinking", "postgres"}, "remote": {"sentry"}},
    "cursor": {"wired": {"server-name", "python-tool"}, "remote": {"remote-server"}},
    "vscode": {"wired": {"Perplexity", "fetch", "memory"}, "remote": {"github"}},
    "windsurf": {"wired": {"git", "brave-search"}, "remote": {"figma"}},
}


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("MCPWARD_STATE_DIR", str(state))
    return state


@pytest.mark.parametrize("client", sorted(FIXTURES))
def test_wire_twice_then_unwire_is_byte_identical(client: str, tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES[client], tmp_path)
    original = path.read_bytes()
    before = read_document(path, CLIENTS[client])

    first = mcpward("wire", client, "--config-file", str(path))
    assert first.code == 0, first.text
    wired_bytes = path.read_bytes()
    assert wired_bytes != original
    after = kinds(client, path)
    assert {n for n, k in after.items() if k == EntryKind.WIRED} == EXPECTED[client]["wired"]
    assert {n for n, k in after.items() if k == EntryKind.REMOTE} == EXPECTED[client]["remote"]
    for secret in SECRETS:
        assert secret not in first.text

    # each wired entry: the gateway wrapping the original command line, env passed on by name
    launcher = find_launcher()
    doc = read_document(path, CLIENTS[client])
    for entry in doc.entries:
        old = next(e for e in before.entries if e.name == entry.name and e.where == entry.where)
        if entry.name not in EXPECTED[client]["wired"]:
            assert entry.node.value == old.node.value
            continue
        assert entry.command == launcher.command
        passed = [
            n for flag, n in zip(entry.args, entry.args[1:], strict=False) if flag == "--pass-env"
        ]
        assert passed == old.env_names
        assert entry.args[: len(launcher.prefix) + 3] == [
            *launcher.prefix,
            "run",
            "--id",
            entry.args[len(launcher.prefix) + 2],
        ]
        assert entry.args[entry.args.index("--") + 1 :] == [old.command, *old.args]
        assert entry.node.value.get("env") == old.node.value.get("env")

    again = mcpward("wire", client, "--config-file", str(path))
    assert again.code == 0, again.text
    assert "Nothing to wire" in again.stdout
    assert path.read_bytes() == wired_bytes

    undone = mcpward("unwire", client, "--config-file", str(path))
    assert undone.code == 0, undone.text
    assert path.read_bytes() == original
    for secret in SECRETS:
        assert secret not in undone.text


def test_vscode_comments_and_trailing_commas_survive(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["vscode"], tmp_path)
    comments = re.findall(r"(?<!:)//[^\n]*|/\*.*?\*/", path.read_text(), flags=re.S)
    assert len(comments) == 7
    assert mcpward("wire", "vscode", "--config-file", str(path)).code == 0
    text = path.read_text()
    for comment in comments:
        assert comment in text
    # the entry with an envFile is listed, not wired; the remote one is left alone
    assert kinds("vscode", path)["python-env"] == EntryKind.ENV_FILE
    assert kinds("vscode", path)["github"] == EntryKind.REMOTE


def test_the_diff_masks_env_headers_and_every_other_value(tmp_path: Path) -> None:
    path = copy_fixture(FIXTURES["claude-desktop"], tmp_path)
    run = mcpward("wire", "claude-desktop", "--config-file", str(path), "--dry-run")
    assert run.code == 0, run.text
    assert '"GITHUB_PERSONAL_ACCESS_TOKEN": "***"' in run.stdout
    assert '"globalShortcut": "***"' in run.stdout
    assert '-      "command": "npx",' in run.stdout
    assert "Dry run: nothing written." in run.stdout
    for secret in SECRETS:
        assert secret not in run.text


def test_a_secret_in_args_is_redacted_in_the_diff(tmp_path: Path) -> None:
    token = "ghp_" + "Q7w3E9r1T5y8U2i6O4p0A3s7D1f5G9h2J6k4"
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"gh": {"command": "gh-mcp", "args": ["--github", token]}}})
    )
    run = mcpward("wire", "cursor", "--config-file", str(path), "--dry-run")
    assert run.code == 0, run.text
    assert token not in run.text
    assert "[REDACTED:" in run.stdout


def test_dry_run_writes_nothing(tmp_path: Path, _state: Path) -> None:
    path = copy_fixture(FIXTURES["cursor"], tmp_path)
    original = path.read_bytes()
    run = mcpward("wire", "cursor", "--config-file", str(path), "--dry-run")
    assert run.code == 0
    assert '+      "command": ' in run.stdout
    assert path.read_bytes() == original
    assert not (_state / "wiring").exists() or not any((_state / "wiring").iterdir())


def test_mode_is_kept_and_a_symlinked_config_stays_a_symlink(tmp_path: Path) -> None:
    real = copy_fixture(FIXTURES["windsurf"], tmp_path)
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert mcpward("wire", "windsurf", "--config-file", str(link)).code == 0
    assert link.is_symlink()
    assert real.stat().st_mode & 0o777 == 0o640
    assert kinds("windsurf", real)["git"] == EntryKind.WIRED
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_backup_and_marker_are_private(tmp_path: Path, _state: Path) -> None:
    path = copy_fixture(FIXTURES["claude-desktop"], tmp_path)
    assert mcpward("wire", "claude-desktop", "--config-file", str(path)).code == 0
    files = sorted((_state / "wiring").iterdir())
    assert [p.suffix for p in files] == [".json", ".orig"]
    for file in files:
        assert file.stat().st_mode & 0o777 == 0o600
    assert (_state / "wiring").stat().st_mode & 0o777 == 0o700
    assert (
        files[1].read_bytes()
        == (Path(__file__).parent / "data" / FIXTURES["claude-desktop"]).read_bytes()
    )
    assert os.path.basename(str(files[0])).startswith("claude-desktop-")


def test_ids_are_valid_and_unique(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    servers = {
        "my server": {"command": "a"},
        "my-server": {"command": "b"},
        "ünï/cödé": {"command": "c"},
        "--": {"command": "d"},
    }
    path.write_text(json.dumps({"mcpServers": servers}, ensure_ascii=False))
    assert mcpward("wire", "cursor", "--config-file", str(path)).code == 0
    doc = read_document(path, CLIENTS["cursor"])
    ids = [e.args[e.args.index("--id") + 1] for e in doc.entries]
    assert ids == ["my-server", "my-server-2", "n-c-d", "server"]
    for upstream_id in ids:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}", upstream_id)


def test_comments_and_control_characters_are_not_printed(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        '{\n  // token: hunter2-not-a-pattern\n  "servers": {\n'
        '    "a": {"command": "x", /* \x1b[2J */ "args": []}\n  }\n}\n'
    )
    run = mcpward("wire", "vscode", "--config-file", str(path), "--dry-run")
    assert run.code == 0, run.text
    assert "hunter2" not in run.text
    assert "\x1b" not in run.text
    assert "// ***" in run.stdout and "/* *** */" in run.stdout


def test_the_module_form_is_recognised_as_wired(tmp_path: Path) -> None:
    launcher = Launcher(sys.executable, MODULE_PREFIX)
    args = launcher.wrap("t", ["K"], ["uvx", "mcp-server-time"])
    assert args == [
        "-m",
        "mcpward",
        "run",
        "--id",
        "t",
        "--pass-env",
        "K",
        "--",
        "uvx",
        "mcp-server-time",
    ]
    assert is_wired(sys.executable, args)
    assert is_wired("/opt/mcpward/bin/mcpward", ["run", "--config", "gw.yaml"])
    assert is_wired("C:\\Tools\\mcpward.exe", ["run", "--", "x"])
    assert not is_wired("mcpward", ["screen", "--", "x"])
    assert not is_wired(sys.executable, ["-m", "mcp_server_time"])
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": args}}}))
    run = mcpward("wire", "cursor", "--config-file", str(path))
    assert "already  t" in run.stdout and "Nothing to wire" in run.stdout


def test_remote_addresses_are_listed_without_their_secrets(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    servers = {
        "zap": {"url": "https://actions.example.com/mcp/sk-ak-Zq8Lr2Wx5Tn7Vb3Mc9Kd/sse"},
        "basic": {"url": "https://user:hunter2@mcp.example.com:8443/mcp?api_key=abc123"},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    run = mcpward("wire", "cursor", "--config-file", str(path))
    assert run.code == 0, run.text
    assert "remote   zap -> https://actions.example.com/mcp/…/sse (left alone)" in run.stdout
    assert "remote   basic -> https://mcp.example.com:8443/mcp (left alone)" in run.stdout
    for secret in ("sk-ak-Zq8Lr2Wx5Tn7Vb3Mc9Kd", "hunter2", "abc123", "user:"):
        assert secret not in run.text


def test_a_byte_order_mark_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    original = '\ufeff{"servers": {"a": {"command": "x"}}}'.encode()
    path.write_bytes(original)
    assert mcpward("wire", "vscode", "--config-file", str(path)).code == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbf{")
    assert kinds("vscode", path)["a"] == EntryKind.WIRED
    assert mcpward("unwire", "vscode", "--config-file", str(path)).code == 0
    assert path.read_bytes() == original


def test_credential_looking_args_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    args = [
        "--api-key",
        "plainpw1",
        "--password=plainpw2",
        "postgresql://shop:plainpw3@db:5432/shop",
        "--verbose",
        "/srv/data",
    ]
    path.write_text(json.dumps({"mcpServers": {"db": {"command": "srv", "args": args}}}))
    run = mcpward("wire", "cursor", "--config-file", str(path), "--dry-run")
    assert run.code == 0, run.text
    for secret in ("plainpw1", "plainpw2", "plainpw3"):
        assert secret not in run.text
    for shown in ('"--api-key"', '"--verbose"', '"/srv/data"', '"srv"'):
        assert shown in run.stdout
