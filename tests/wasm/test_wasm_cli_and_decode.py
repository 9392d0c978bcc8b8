"""`mcpward guard check|wit`, and decoding out-of-process decisions (wasm and http_hook)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.guards.wasm.decode import DecisionFormatError, decode_deny, decode_modify_action
from mcpward.pipeline import AddWarning, Phase, RedactFields, ReplaceTools
from tests.wasm import building

runner = CliRunner()


def test_guard_check_prints_the_hash_to_pin(fixture_wasm: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["guard", "check", str(fixture_wasm), "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "keeps mcp:security-guard@0.1.0" in result.output
    assert f"sha256: {building.sha256_of(fixture_wasm)}" in result.output
    assert "needs_wasi" not in result.output


def test_guard_check_names_wasi_needs(probe_wasm: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["guard", "check", str(probe_wasm), "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "needs_wasi: true" in result.output


def test_guard_check_refuses_a_core_module(wasm_build_dir: Path, tmp_path: Path) -> None:
    core = building.build_core_module(building.GUESTS / "fixture.wat", wasm_build_dir)
    result = runner.invoke(app, ["guard", "check", str(core), "--state-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "it is a core module" in result.output


def test_guard_wit_prints_the_contract() -> None:
    result = runner.invoke(app, ["guard", "wit"])
    assert result.exit_code == 0
    assert "package mcp:security-guard@0.1.0;" in result.output
    assert (building.WIT_DIR / "guard.wit").read_text() == result.output


LISTED = [
    {"name": "a", "description": "A", "inputSchema": {"type": "object"}, "annotations": {"x": 1}},
    {"name": "b", "description": "B", "inputSchema": {}},
]


def test_replace_tools_merges_and_orders() -> None:
    action = {"type": "replace_tools", "tools": [{"name": "b"}, {"name": "a", "input_schema": {}}]}
    decoded = decode_modify_action(action, Phase.TOOLS_LIST, LISTED)
    assert isinstance(decoded, ReplaceTools)
    assert decoded.tools == [LISTED[1], {**LISTED[0], "inputSchema": {}}]


def test_the_serde_spelling_is_accepted() -> None:
    assert decode_modify_action(
        {"AddWarning": {"message": "m"}}, Phase.TOOL_INVOKE, {}
    ) == AddWarning("m")
    assert decode_modify_action(
        {"RedactFields": {"paths": ["$.a"], "replacement": "x"}}, Phase.TOOL_INVOKE, {}
    ) == RedactFields(["$.a"], "x")
    replaced = decode_modify_action({"ReplaceTools": [{"name": "a"}]}, Phase.TOOLS_LIST, LISTED)
    assert isinstance(replaced, ReplaceTools) and replaced.tools == [LISTED[0]]


@pytest.mark.parametrize(
    "action",
    [
        [],
        {"type": "replace_tools", "tools": [{"name": "a"}, {"name": "a"}]},
        {"type": "replace_tools", "tools": [{"description": "no name"}]},
        {"type": "redact_fields", "paths": ["$.a"] * 65},
        {"type": "redact_fields", "paths": [3]},
        {"type": "add_warning", "message": ""},
        {"ReplaceTools": [{"name": "a"}], "extra": 1},
    ],
)
def test_off_format_actions_are_refused(action: object) -> None:
    with pytest.raises(DecisionFormatError):
        decode_modify_action(action, Phase.TOOLS_LIST, LISTED)


def test_deny_details_that_are_not_an_object_are_wrapped() -> None:
    assert decode_deny("c", "m", [1, 2], {}).details == {"value": [1, 2]}
    assert decode_deny("c", "m", None, {}).details is None
    with pytest.raises(DecisionFormatError):
        decode_deny("", "m", None, {})
    with pytest.raises(DecisionFormatError):
        decode_deny("c" * 129, "m", None, {})
