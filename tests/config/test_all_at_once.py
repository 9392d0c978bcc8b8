"""Every problem of a config is reported at once, unknown fields and guard kinds with the nearest
valid name (issue #25, section 4)."""

from __future__ import annotations

import pytest

from mcpward.config.loader import ConfigError, parse_config


def problems(data: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, "cfg.yaml")
    return [str(p) for p in info.value.problems]


def test_an_unknown_guard_kind_is_not_hidden_behind_other_errors() -> None:
    found = problems(
        {
            "upstreams": [{"id": "a", "comand": "x"}],
            "gatway": {},
            "guards": [{"kind": "tool_filtr"}, {"kind": "secrets", "runs_on": []}],
        }
    )
    assert any(p.startswith("guards[0].kind: unknown guard kind 'tool_filtr'") for p in found)
    assert any("did you mean 'tool_filter'?" in p for p in found)
    assert any(
        p.startswith("upstreams[0].comand: unknown field; did you mean 'command'?") for p in found
    )
    assert any(p.startswith("gatway: unknown field; did you mean 'gateway'?") for p in found)
    assert any(p.startswith("guards[1].runs_on") for p in found), found


def test_unknown_fields_name_the_valid_ones() -> None:
    found = problems(
        {
            "upstreams": [{"id": "a", "command": "x"}],
            "gateway": {"namespacin": "auto"},
            "guards": {"replace_default": True},
        }
    )
    assert any(
        p.startswith("gateway.namespacin: unknown field; did you mean 'namespacing'? (valid here:")
        for p in found
    ), found
    assert any(
        "guards.replace_default: unknown field; did you mean 'replace_defaults'?" in p
        for p in found
    )


def test_a_guards_option_gets_a_suggestion() -> None:
    spec = {"kind": "tool_filter", "runs_on": ["tool_invoke"], "config": {"rulez": []}}
    found = problems({"upstreams": [{"id": "a", "command": "x"}], "guards": [spec]})
    assert any("guards[0].config.rulez: unknown field; did you mean 'rules'?" in p for p in found)


def test_a_misspelt_kind_and_its_missing_phases_come_together() -> None:
    found = problems({"upstreams": [{"id": "a", "command": "x"}], "guards": [{"kind": "secret"}]})
    assert any(p.startswith("guards[0].kind: unknown guard kind 'secret'") for p in found)
    assert "guards[0].runs_on: required field is missing" in found
