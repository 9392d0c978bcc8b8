"""Invalid configs never start, and the error names the file, the field and what would be valid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpward.config.loader import ConfigError, load_config, parse_config

GOOD_UPSTREAM = {"id": "time", "command": "mcp-server-time"}


def problems(data: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, "cfg.yaml")
    assert str(info.value).startswith("cfg.yaml: invalid configuration")
    return [str(p) for p in info.value.problems]


def test_minimal_config_gets_defaults() -> None:
    loaded = parse_config({"upstreams": [GOOD_UPSTREAM]})
    assert loaded.config.front.kind == "stdio"
    assert loaded.config.upstreams[0].kind == "stdio"
    assert loaded.config.gateway.max_frame_bytes == 4 * 1024 * 1024
    assert loaded.config.guards is None  # the built-in defaults apply


def test_http_kind_is_inferred_from_url() -> None:
    loaded = parse_config({"upstreams": [{"id": "r", "url": "https://example.com/mcp"}]})
    assert loaded.config.upstreams[0].kind == "http"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, "upstreams: required field is missing"),
        ({"upstreams": []}, "upstreams: List should have at least 1 item"),
        ({"upstreams": [GOOD_UPSTREAM], "bogus": 1}, "bogus: unknown field"),
        (
            {"upstreams": [{"id": "bad id!", "command": "x"}]},
            "upstreams[0].id: String should match pattern",
        ),
        ({"upstreams": [GOOD_UPSTREAM, GOOD_UPSTREAM]}, "upstream id 'time' is used twice"),
        (
            {"upstreams": [GOOD_UPSTREAM], "gateway": {"max_frame_bytes": 10}},
            "gateway.max_frame_bytes",
        ),
        (
            {"upstreams": [GOOD_UPSTREAM], "guards": [{"kind": "tool_filter", "runs_on": []}]},
            "guards[0].runs_on: Value error, runs_on must name at least one phase",
        ),
        (
            {
                "upstreams": [GOOD_UPSTREAM],
                "guards": [
                    {
                        "kind": "tool_filter",
                        "runs_on": ["tool_invoke"],
                        "timeout_ms": 5,
                        "config": {"rules": [{}]},
                    }
                ],
            },
            "guards[0].timeout_ms: Input should be greater than or equal to 10 (got 5)",
        ),
        (
            {
                "upstreams": [GOOD_UPSTREAM],
                "guards": [
                    {
                        "kind": "tool_filter",
                        "runs_on": ["tool_invoke"],
                        "priority": 101,
                        "config": {"rules": [{}]},
                    }
                ],
            },
            "guards[0].priority: Input should be less than or equal to 100",
        ),
        (
            {"upstreams": [GOOD_UPSTREAM], "guards": [{"kind": "nope", "runs_on": ["request"]}]},
            "guards[0].kind: unknown guard kind 'nope'; known kinds:",
        ),
        (
            {
                "upstreams": [GOOD_UPSTREAM],
                "guards": [
                    {"kind": "tool_filter", "runs_on": ["tool_result"], "config": {"rules": [{}]}}
                ],
            },
            "guards[0].runs_on: guard kind 'tool_filter' does not run at tool_result; "
            "it supports: tool_invoke, tools_list",
        ),
        (
            {
                "upstreams": [GOOD_UPSTREAM],
                "guards": [
                    {
                        "kind": "tool_filter",
                        "runs_on": ["tool_invoke"],
                        "config": {"rules": [{"alow": ["x"]}]},
                    }
                ],
            },
            "guards[0].config.rules[0].alow: unknown field",
        ),
        (
            {
                "upstreams": [GOOD_UPSTREAM],
                "guards": [
                    {
                        "kind": "tool_filter",
                        "runs_on": ["tool_invoke"],
                        "failure_mode": "maybe",
                        "config": {"rules": [{}]},
                    }
                ],
            },
            "guards[0].failure_mode: Input should be 'fail_closed' or 'fail_open'",
        ),
    ],
)
def test_each_problem_is_located(data: object, expected: str) -> None:
    found = problems(data)
    assert any(expected in p for p in found), found


def test_duplicate_guard_ids_are_refused() -> None:
    spec = {"kind": "tool_filter", "runs_on": ["tool_invoke"], "config": {"rules": [{}]}}
    found = problems({"upstreams": [GOOD_UPSTREAM], "guards": [spec, spec]})
    assert any(
        "guards[1].id: guard id 'tool_filter' is already used by guards[0]" in p for p in found
    )


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("upstreams:\n  - id: a\n    command: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert (
        str(path) in str(info.value)
        and "line" in str(info.value)
        and "not valid YAML" in str(info.value)
    )


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "absent.yaml")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
    )


def test_cli_check_explains_a_good_config_and_refuses_a_bad_one(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    assert _cli("config", "init", str(good)).returncode == 0
    result = _cli("config", "check", str(good))
    assert result.returncode == 0, result.stderr
    assert "upstream time (stdio)" in result.stdout and "tool_filter" in result.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("upstreams:\n  - id: a\n    command: x\n    colour: red\n")
    result = _cli("config", "check", str(bad))
    assert result.returncode == 1
    unwrapped = result.stderr.replace("\n", "")  # the console wraps a long path
    assert str(bad) in unwrapped and "upstreams[0].colour: unknown field" in result.stderr


def test_cli_schema_is_json_schema_of_the_config() -> None:
    result = _cli("config", "schema")
    schema = json.loads(result.stdout)
    assert "upstreams" in schema["properties"] and "guards" in schema["properties"]


def test_run_refuses_an_invalid_config_without_starting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("upstreams: []\n")
    result = _cli("run", "--config", str(bad))
    assert result.returncode == 2
    assert "upstreams: List should have at least 1 item" in result.stderr
    assert result.stdout == ""
