"""Generated configs and layouts: the reader agrees with the standard library, and wire -> wire ->
unwire gives back the same bytes whatever the entries, their layout, comments and line endings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpward.wiring.backup import WiringStore
from mcpward.wiring.clients import CLIENTS, default_config_path
from mcpward.wiring.document import read_document
from mcpward.wiring.entries import EntryKind
from mcpward.wiring.jsonc import JsoncError, parse
from mcpward.wiring.launcher import Launcher
from mcpward.wiring.operations import apply_unwire, apply_wire, plan_unwire, plan_wire

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
stdio_entries = st.fixed_dictionaries(
    {"command": words},
    optional={
        "args": st.lists(words, max_size=4),
        "env": st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True), words),
        "type": st.just("stdio"),
        "disabled": st.booleans(),
    },
)
remote_entries = st.fixed_dictionaries({"url": st.just("https://mcp.example.com/mcp")})
configs = st.dictionaries(words, stdio_entries | remote_entries, min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2, 4, "\t"]))
def test_the_reader_agrees_with_json_loads(value: Any, indent: int | str | None) -> None:
    text = json.dumps(value, indent=indent)
    assert parse(text, jsonc=False).value == json.loads(text)
    assert parse(text, jsonc=True).value == json.loads(text)


@pytest.mark.parametrize(
    "text", ["01", "NaN", "Infinity", "'a'", "[1,]", '{"a" 1}', "[1 2]", "tru"]
)
def test_the_reader_refuses_what_json_forbids(text: str) -> None:
    with pytest.raises(JsoncError):
        parse(text, jsonc=False)


def _layout(servers: dict[str, Any], indent: int | None, crlf: bool, comments: bool) -> str:
    text = json.dumps({"mcpServers": servers, "other": {"k": [1, 2]}}, indent=indent)
    if comments:
        text = "// generated\n" + text.replace('"other"', '/* kept */ "other"', 1)
    return text.replace("\n", "\r\n") if crlf else text


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    configs,
    st.sampled_from([None, 2, 4]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["cursor", "vscode"]),
    st.booleans(),
)
def test_wire_rewire_unwire_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    servers: dict[str, Any],
    indent: int | None,
    crlf: bool,
    comments: bool,
    client_name: str,
    module_form: bool,
) -> None:
    client = CLIENTS[client_name]
    if client.containers == (("servers",),):
        text = _layout(servers, indent, crlf, comments).replace('"mcpServers"', '"servers"', 1)
    else:
        text = _layout(servers, indent, crlf, comments=False)
    directory = tmp_path_factory.mktemp("gen")
    path = directory / "mcp.json"
    path.write_bytes(text.encode())
    store = WiringStore(directory / "state")
    launcher = Launcher("python3", ("-m", "mcpward")) if module_form else Launcher("/x/mcpward")

    plan = plan_wire(client, path, launcher, store)
    stdio = [e for e in plan.before.entries if e.kind == EntryKind.STDIO]
    assert len(plan.wired) == len(stdio)
    if plan.changed:
        apply_wire(plan, store)
    wired = read_document(path, client)
    assert all(e.kind != EntryKind.STDIO for e in wired.entries)

    again = plan_wire(client, path, launcher, store)
    assert not again.changed

    if plan.changed:
        apply_unwire(plan_unwire(client, path, store), store)
    assert path.read_bytes() == text.encode()


def test_default_paths_per_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("APPDATA", "C:/Users/me/AppData/Roaming")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    support = tmp_path / "Library" / "Application Support"
    assert default_config_path("claude-desktop", "darwin") == (
        support / "Claude" / "claude_desktop_config.json"
    )
    assert default_config_path("claude-desktop", "win32") == Path(
        "C:/Users/me/AppData/Roaming/Claude/claude_desktop_config.json"
    )
    assert default_config_path("claude-desktop", "linux") == (
        tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    )
    assert default_config_path("vscode", "darwin") == support / "Code" / "User" / "mcp.json"
    assert default_config_path("vscode", "win32") == Path(
        "C:/Users/me/AppData/Roaming/Code/User/mcp.json"
    )
    assert default_config_path("vscode", "linux") == tmp_path / ".config/Code/User/mcp.json"
    for platform in ("darwin", "win32", "linux"):
        assert default_config_path("claude-code", platform) == tmp_path / ".claude.json"
        assert default_config_path("cursor", platform) == tmp_path / ".cursor" / "mcp.json"
        assert default_config_path("windsurf", platform) == (
            tmp_path / ".codeium" / "windsurf" / "mcp_config.json"
        )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(configs, st.sampled_from([None, 2]), st.sampled_from([None, 1, 3]))
def test_unwire_after_the_client_rewrote_the_layout(
    tmp_path_factory: pytest.TempPathFactory,
    servers: dict[str, Any],
    indent: int | None,
    new_indent: int | None,
) -> None:
    client = CLIENTS["claude-code"]
    text = json.dumps({"mcpServers": servers, "numStartups": 1}, indent=indent)
    directory = tmp_path_factory.mktemp("gen")
    path = directory / "claude.json"
    path.write_text(text)
    store = WiringStore(directory / "state")
    plan = plan_wire(client, path, Launcher("/x/mcpward"), store)
    if not plan.changed:
        return
    apply_wire(plan, store)
    data = json.loads(path.read_text())
    data["numStartups"] = 2  # the client saved its own state, in its own layout
    path.write_text(json.dumps(data, indent=new_indent))
    apply_unwire(plan_unwire(client, path, store), store)
    assert json.loads(path.read_text()) == {"mcpServers": servers, "numStartups": 2}
