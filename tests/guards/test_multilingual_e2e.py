"""tool_poisoning through the real gateway (`mcpward run --config`, SDK client) against an
upstream whose tools are written in Spanish, German, French and Portuguese.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.fixtures import multilingual_server as fixture
from tests.guards.test_content_e2e import receipts

FIXTURE = str(Path(fixture.__file__).resolve())
GUARDS = [{"kind": "tool_poisoning", "priority": 20, "runs_on": ["tools_list"]}]


def upstream(variant: str) -> dict[str, Any]:
    return {
        "id": f"ml-{variant}",
        "kind": "stdio",
        "command": sys.executable,
        "args": [FIXTURE, "--variant", variant],
    }


async def test_spanish_poisoned_tool_is_dropped_and_benign_ones_pass(gateway_client: Any) -> None:
    async with gateway_client([upstream("poisoned")], guards=GUARDS, mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "exportar_informe" not in names
    assert {"wetter", "rechercher"} <= names


async def test_preference_manipulation_tool_is_dropped(gateway_client: Any) -> None:
    async with gateway_client([upstream("preference")], guards=GUARDS, mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "carte_pro" not in names
    assert "mapa" in names


async def test_default_guards_drop_and_deny_the_spanish_tool_and_record_it(
    gateway_client: Any, tmp_path: Path
) -> None:
    """No `guards:` in the config: the built-in defaults."""
    async with gateway_client([upstream("poisoned")], mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "exportar_informe" not in names
        assert {"wetter", "rechercher"} <= names
        with pytest.raises(MCPError) as caught:
            await client.call_tool("exportar_informe", {"mes": "mayo"})
        assert caught.value.code == -32013
        data = caught.value.data or {}
        assert (data.get("guard"), data.get("code")) == ("tool_poisoning", "poisoned_item")
        weather = await client.call_tool("wetter", {"stadt": "Graz"})
        assert weather.is_error is False

    written = receipts(tmp_path / "mcpward.yaml")
    listing = next(r for r in written if r["method"] == "tools/list")
    poisoning = next(g for g in listing["guards"] if g["kind"] == "tool_poisoning")
    assert [item["name"] for item in poisoning["evidence"]["items"]] == ["exportar_informe"]
    assert {"hidden-instruction", "concealment"} <= set(poisoning["evidence"]["families"])


async def test_orders_only_the_learned_scorer_sees_are_dropped_denied_and_explained(
    gateway_client: Any, tmp_path: Path
) -> None:
    """Default guards, tools written for this test (in no training set): the rules score them
    under the threshold, the learned scorer drops them; the benign ones pass."""
    async with gateway_client([upstream("learned")], mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"valute", "bang"} <= names
        assert not {"cambio", "hoeui"} & names
        with pytest.raises(MCPError) as caught:
            await client.call_tool("hoeui", {"room": "A", "notes": "x"})
        assert (caught.value.data or {}).get("code") == "poisoned_item"
        assert (await client.call_tool("valute", {"da": "EUR", "a": "USD"})).is_error is False

    listing = next(r for r in receipts(tmp_path / "mcpward.yaml") if r["method"] == "tools/list")
    poisoning = next(g for g in listing["guards"] if g["kind"] == "tool_poisoning")
    items = {item["name"]: item for item in poisoning["evidence"]["items"]}
    assert set(items) == {"cambio", "hoeui"}
    for item in items.values():
        assert "learned-directive" in item["families"]
        assert item["learned"]["probability"] >= item["learned"]["threshold"]
        assert item["learned"]["top_features"]


async def test_learned_reads_all_removes_an_order_with_no_cue_that_the_default_lets_through(
    gateway_client: Any, tmp_path: Path
) -> None:
    """A tool result whose order to the model carries no rule cue (Korean, written for this
    test): the default response_injection does not read it; with the opt-in
    `learned_reads: all` the learned scorer does, the sentence goes and the receipt says why."""
    async with gateway_client([upstream("results")], mode="legacy") as client:
        text = (await client.call_tool("doseogwan", {})).content[0].text  # type: ignore[union-attr]
        assert fixture.UNCUED_KO in text
    reads_all = [  # (the harness writes `replace_defaults: true`: a full entry)
        {
            "kind": "response_injection",
            "priority": 65,
            "runs_on": ["tool_result"],
            "config": {"learned_reads": "all", "action": "redact"},
        }
    ]
    async with gateway_client([upstream("results")], guards=reads_all, mode="legacy") as client:
        text = (await client.call_tool("doseogwan", {})).content[0].text  # type: ignore[union-attr]
        assert fixture.UNCUED_KO not in text and "[REMOVED:learned-directive]" in text
        plain = (await client.call_tool("yeollamsil", {})).content[0].text  # type: ignore[union-attr]
        assert "[REMOVED" not in plain
    call = next(
        r for r in receipts(tmp_path / "mcpward.yaml") if "prompt_injection" in r["redactions"]
    )
    injection = next(g for g in call["guards"] if g["kind"] == "response_injection")
    assert injection["evidence"]["fields"][0]["learned"]["model"] == "result"
