"""A config's `guards:` adds to or adjusts the built-in defaults unless it says it replaces them;
`config init` keeps them; `config check` and `doctor --config` say which protections are on and
warn when one is off (issue #25, section 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcpward.config.loader import ConfigError, parse_config
from mcpward.config.protections import protection_states
from mcpward.guards.defaults import default_guard_specs

UPSTREAM = {"id": "time", "command": "mcp-server-time"}
FILTER = {
    "kind": "tool_filter",
    "runs_on": ["tools_list", "tool_invoke"],
    "config": {"rules": [{"upstream": "*", "deny": ["*delete*"]}]},
}
DEFAULT_IDS = [spec.id for spec in default_guard_specs()]


def ids(data: dict[str, object]) -> list[str]:
    return [spec.id or spec.kind for spec in parse_config(data).guard_specs]


def test_a_list_adds_to_the_defaults() -> None:
    assert ids({"upstreams": [UPSTREAM], "guards": [FILTER]}) == [*DEFAULT_IDS, "tool_filter"]
    assert ids({"upstreams": [UPSTREAM], "guards": []}) == DEFAULT_IDS


def test_an_entry_with_a_defaults_id_adjusts_it() -> None:
    data = {
        "upstreams": [UPSTREAM],
        "guards": [
            {"id": "rug_pull", "config": {"posture": "strict"}},
            {"kind": "response_injection", "enabled": False},
        ],
    }
    specs = {spec.id: spec for spec in parse_config(data).guard_specs}
    assert list(specs) == DEFAULT_IDS
    default = {spec.id: spec for spec in default_guard_specs()}
    assert specs["rug_pull"].config == {"posture": "strict"}
    assert specs["rug_pull"].runs_on == default["rug_pull"].runs_on  # kept
    assert specs["rug_pull"].timeout_ms == default["rug_pull"].timeout_ms
    assert specs["response_injection"].enabled is False


def test_only_an_explicit_replace_drops_the_defaults() -> None:
    data = {"upstreams": [UPSTREAM], "guards": {"replace_defaults": True, "list": [FILTER]}}
    assert ids(data) == ["tool_filter"]
    empty = {"upstreams": [UPSTREAM], "guards": {"replace_defaults": True, "list": []}}
    assert ids(empty) == []
    kept = {"upstreams": [UPSTREAM], "guards": {"list": [FILTER]}}
    assert ids(kept) == [*DEFAULT_IDS, "tool_filter"]


def test_a_default_id_on_another_kind_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"upstreams": [UPSTREAM], "guards": [{**FILTER, "id": "rug_pull"}]})
    text = str(info.value)
    assert "guards[0].id: 'rug_pull' is the id of the built-in rug_pull guard" in text
    assert "replace_defaults: true" in text


def test_an_adjusting_entry_without_defaults_says_there_is_none_to_adjust() -> None:
    adjust = {"id": "response_injection", "config": {"action": "redact"}}
    with pytest.raises(ConfigError) as info:
        parse_config({"upstreams": [UPSTREAM], "guards": [{"runs_on": ["tool_result"]}]})
    assert "give the `id` of a built-in guard to adjust it: " + ", ".join(DEFAULT_IDS) in str(
        info.value
    )
    replaced = {"replace_defaults": True, "list": [adjust]}
    with pytest.raises(ConfigError) as info:
        parse_config({"upstreams": [UPSTREAM], "guards": replaced})
    assert "`replace_defaults: true` drops the built-in guards: there is none to adjust" in str(
        info.value
    )


def test_protections_say_what_is_off() -> None:
    replaced = parse_config(
        {"upstreams": [UPSTREAM], "guards": {"replace_defaults": True, "list": [FILTER]}}
    )
    states = {s.kind: s for s in protection_states(replaced)}
    assert all(s.state == "off" for s in states.values())
    assert "drift gate (rug_pull) is off" in (states["rug_pull"].warning or "")
    kept = parse_config({"upstreams": [UPSTREAM], "guards": [FILTER]})
    assert all(s.state == "on" and s.warning is None for s in protection_states(kept))
    shadow = parse_config({"upstreams": [UPSTREAM], "gateway": {"mode": "shadow"}})
    assert {s.state for s in protection_states(shadow)} == {"records only"}


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


def test_config_init_keeps_the_defaults_and_check_says_so(tmp_path: Path) -> None:
    path = tmp_path / "mcpward.yaml"
    assert _cli("config", "init", str(path)).returncode == 0
    written = yaml.safe_load(path.read_text())
    assert ids(written) == [*DEFAULT_IDS, "tool_filter"]
    done = _cli("config", "check", str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "protections:" in out and "warning" not in out
    for kind in ("rug_pull", "tool_poisoning", "tool_shadowing", "secrets", "response_injection"):
        assert f"on      {kind}:" in out
    assert "7 guard(s): the built-in defaults and 1 entry of the config" in out


def test_check_and_doctor_warn_when_the_drift_gate_is_off(tmp_path: Path) -> None:
    path = tmp_path / "mcpward.yaml"
    data = {
        "upstreams": [UPSTREAM],
        "state_dir": str(tmp_path / "state"),
        "guards": [{"id": "rug_pull", "enabled": False}, {"id": "secrets", "enabled": False}],
    }
    path.write_text(yaml.safe_dump(data))
    done = _cli("config", "check", str(path))
    assert done.returncode == 0, done.stderr
    assert "OFF     rug_pull:" in done.stdout
    assert "warning: the drift gate (rug_pull) is off" in done.stdout
    assert "warning: content guard secrets is off" in done.stdout
    doctor = _cli("doctor", "--config", str(path))
    assert "WARN  protections: the drift gate (rug_pull) is off" in doctor.stdout, doctor.stdout
    assert "WARN  protections: content guard secrets is off" in doctor.stdout
