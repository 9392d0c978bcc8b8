"""Unparseable or unknown-shaped config files are refused with the path and the reason, and never
rewritten; the JSON reader's errors name line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpward.wiring.jsonc import BOM, MAX_DEPTH, JsoncError, parse
from tests.wiring.support import mcpward


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("MCPWARD_STATE_DIR", str(state))
    return state


@pytest.mark.parametrize(
    ("client", "text", "reason"),
    [
        ("claude-desktop", '{"mcpServers": {"a": {"command": "x",}}}', "trailing comma"),
        ("claude-desktop", '{\n  // note\n  "mcpServers": {}\n}', "comment in a file that must"),
        ("cursor", '{"mcpServers": {"a": {"command": "x"}}', "expected ',' or '}'"),
        (
            "cursor",
            '{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}',
            "duplicate key",
        ),
        ("vscode", '{"servers": {"a": {"command": "x"}} /* open', "unterminated /* comment"),
        ("windsurf", "", "unexpected end of text"),
        ("windsurf", '{"mcpServers": {}} {}', "unexpected text after the document"),
        ("cursor", '["mcpServers"]', "the top level is not a JSON object"),
        ("cursor", '{"mcpServers": []}', "'mcpServers' (line 1, column 16) is not an object"),
        (
            "cursor",
            '{"mcpServers": {"a": "npx"}}',
            "server 'a' (line 1, column 22) is not an object",
        ),
        ("cursor", '{"mcpServers": {"a": {"args": []}}}', "has neither a 'command' nor a 'url'"),
        ("cursor", '{"mcpServers": {"a": {"command": "x", "args": "-y"}}}', "'args' is not a list"),
        (
            "cursor",
            '{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}',
            "'env' is not an object",
        ),
        (
            "vscode",
            '{"servers": {"a": {"command": "x", "url": "https://h"}}}',
            "both a command and a URL",
        ),
        (
            "vscode",
            '{"servers": {"a": {"type": "sse", "command": "x"}}}',
            "both a command and a URL",
        ),
        ("vscode", '{"servers": {"a": {"command": ""}}}', "'command' is not a non-empty string"),
    ],
)
def test_refused_with_path_and_reason_and_left_alone(
    client: str, text: str, reason: str, tmp_path: Path, _state: Path
) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    run = mcpward("wire", client, "--config-file", str(path))
    assert run.code == 2
    assert str(path) in run.stderr
    assert reason in run.stderr
    assert "left unchanged" in run.stderr or not text
    assert path.read_text() == text
    assert not (_state / "wiring").exists()


def test_a_missing_file_and_an_unknown_client(tmp_path: Path) -> None:
    run = mcpward("wire", "cursor", "--config-file", str(tmp_path / "nope.json"))
    assert run.code == 2
    assert f"{tmp_path / 'nope.json'}: no such file" in run.stderr
    run = mcpward("wire", "emacs")
    assert run.code == 2
    assert "unknown client 'emacs'" in run.stderr


def test_non_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_bytes(b'{"mcpServers": {"a": {"command": "\xff"}}}')
    run = mcpward("wire", "cursor", "--config-file", str(path))
    assert run.code == 2
    assert "not UTF-8" in run.stderr


def test_no_servers_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"theme": "dark"}\n')
    run = mcpward("wire", "cursor", "--config-file", str(path))
    assert run.code == 0
    assert "Nothing to wire" in run.stdout
    assert path.read_text() == '{"theme": "dark"}\n'


def test_reader_positions_bom_and_depth() -> None:
    with pytest.raises(JsoncError, match=r"line 3, column 5"):
        parse('{\n  "a": 1,\n    ]', jsonc=False)
    root = parse(BOM + '{"a": [1, 2.5e3, true, null, "\\u00e9"]}', jsonc=False)
    assert root.value == {"a": [1, 2500.0, True, None, "é"]}
    assert root.start == 1
    deep = "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)
    with pytest.raises(JsoncError, match="nested deeper"):
        parse(deep, jsonc=False)
    with pytest.raises(JsoncError, match="control character"):
        parse('"a\nb"', jsonc=False)
    jsonc = parse('// c\n{"a": [1, /* two */ 2,], // x\n}', jsonc=True)
    assert jsonc.value == {"a": [1, 2]}
