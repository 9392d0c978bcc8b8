"""tool_filter through the real gateway process: tool globs ignore case (and compatibility forms)
unless a rule says `case_sensitive: true`; what a list hides is refused by name."""

from __future__ import annotations

from typing import Any

from tests.guards.conftest import make_guard
from tests.relay import conftest as relay
from tests.relay.conftest import GatewayFactory, echo_upstream

gateway = relay.gateway  # the relay tests' fixture: a gateway process in front of echo upstreams

# The README's example rule, and tool names an upstream may choose to slip past it.
README_RULE = {"upstream": "*", "deny": ["*delete*", "*drop*"]}
TOOLS = "Delete_All,DROP_TABLE,\uff24\uff25\uff2c\uff25\uff34\uff25_rows,read_file,echo"


def tool_filter(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "tool_filter", "runs_on": ["tools_list"], "config": {"rules": list(rules)}}


async def test_readme_rule_stops_names_in_any_case(gateway: GatewayFactory) -> None:
    async with gateway(
        [echo_upstream("fs", ECHO_TOOLS=TOOLS)], guards=[tool_filter(README_RULE)]
    ) as peer:
        listed = await peer.call("tools/list", {})
        assert sorted(t["name"] for t in listed["tools"]) == ["echo", "read_file"]
        for name in ("Delete_All", "DROP_TABLE", "\uff24\uff25\uff2c\uff25\uff34\uff25_rows"):
            answer = await peer.request("tools/call", {"name": name, "arguments": {}})
            assert answer["error"]["code"] == -32013, (name, answer)
            assert answer["error"]["data"]["code"] == "tool_not_allowed", answer
        answer = await peer.request("tools/call", {"name": "echo", "arguments": {}})
        assert "result" in answer, answer


async def test_a_case_sensitive_rule_matches_as_written(gateway: GatewayFactory) -> None:
    exact = {"upstream": "*", "deny": ["*DROP*"], "case_sensitive": True}
    async with gateway(
        [echo_upstream("db", ECHO_TOOLS="DROP_TABLE,drop_index,echo")], guards=[tool_filter(exact)]
    ) as peer:
        listed = await peer.call("tools/list", {})
        assert sorted(t["name"] for t in listed["tools"]) == ["drop_index", "echo"]


def test_allow_lists_ignore_case_too_and_upstream_globs_stay_exact() -> None:
    from mcpward.guards.tool_filter import folded

    guard = make_guard("tool_filter", ["tools_list"], {"rules": [{"allow": ["Read_*"]}]})
    assert guard.permits("fs", "read_file") and guard.permits("fs", "READ_DIR")
    assert not guard.permits("fs", "write_file")
    scoped = make_guard(
        "tool_filter", ["tools_list"], {"rules": [{"upstream": "prod", "deny": ["*"]}]}
    )
    assert not scoped.permits("prod", "x") and scoped.permits("PROD", "x")
    assert folded("Stra\u00dfe") == folded("STRASSE")
