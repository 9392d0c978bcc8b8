"""The bundled demo server, driven directly by the real SDK client over stdio in both eras."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ToolListChangedNotification

from mcpward.demo.server import (
    DRIFT_PARAM,
    DRIFT_TOOL,
    FAKE_GITHUB_TOKEN,
    FAKE_OPENAI_KEY,
    REWORD_TOOL,
    REWORDED_DESCRIPTION,
    write_control,
)
from tests.support.gateway import ClientMode, open_client

# The corresponding gitleaks rules (config/gitleaks.toml, rules openai-api-key and github-pat):
# the fakes must look real to a secret scanner, or the redaction demo shows nothing.
OPENAI_KEY_RULE = re.compile(
    r"\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ"
    r"(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})\b)"
)
GITHUB_PAT_RULE = re.compile(r"ghp_[0-9a-zA-Z]{36}")


def demo_params(control: Path | None = None) -> StdioServerParameters:
    args = ["-m", "mcpward.demo.server"]
    if control is not None:
        args += ["--control", str(control)]
    return StdioServerParameters(command=sys.executable, args=args)


def schema_of(tools: Any, name: str) -> dict[str, Any]:
    tool = next(t for t in tools.tools if t.name == name)
    schema: dict[str, Any] = tool.input_schema
    return schema


async def test_surface_in_both_eras(client_mode: ClientMode) -> None:
    async with open_client(demo_params(), mode=client_mode) as client:
        assert client.protocol_version == (
            "2025-11-25" if client_mode == "legacy" else "2026-07-28"
        )
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"echo", "add", "read_config", "delete_file"}
        assert tools["echo"].annotations is not None and tools["echo"].annotations.read_only_hint
        destructive = tools["delete_file"].annotations
        assert destructive is not None
        assert destructive.destructive_hint is True and destructive.read_only_hint is False

        echoed = await client.call_tool("echo", {"message": "hello"})
        assert not echoed.is_error and echoed.content[0].text == "hello"  # type: ignore[union-attr]
        total = await client.call_tool("add", {"a": 2, "b": 3})
        assert total.structured_content == {"result": 5}

        config = (await client.call_tool("read_config", {})).content[0].text  # type: ignore[union-attr]
        assert FAKE_OPENAI_KEY in config and FAKE_GITHUB_TOKEN in config
        assert OPENAI_KEY_RULE.search(config) and GITHUB_PAT_RULE.search(config)

        prompt = await client.get_prompt("summarize", {"text": "abc"})
        assert "abc" in prompt.messages[0].content.text  # type: ignore[union-attr]
        resources = (await client.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["demo://notes/welcome"]
        welcome = await client.read_resource("demo://notes/welcome")
        assert "demo server" in welcome.contents[0].text  # type: ignore[union-attr]


async def test_announced_drift_then_silent_revert_legacy(demo_control: Path) -> None:
    notes: list[Any] = []
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            notes.append(message)
            changed.set()

    async with open_client(
        demo_params(demo_control), mode="legacy", message_handler=on_message
    ) as client:
        caps = client.server_capabilities.tools
        assert caps is not None and caps.list_changed is True
        assert schema_of(await client.list_tools(), DRIFT_TOOL)["required"] == ["message"]

        write_control(demo_control, drift=True, notify=True)
        await asyncio.wait_for(changed.wait(), 10)
        drifted = schema_of(await client.list_tools(), DRIFT_TOOL)
        assert drifted["required"] == ["message", DRIFT_PARAM]
        result = await client.call_tool(DRIFT_TOOL, {"message": "hi", DRIFT_PARAM: "t"})
        assert result.content[0].text == "hi"  # type: ignore[union-attr]

        # Silent: the contract moves back, but no notification says so.
        write_control(demo_control, drift=False, notify=False)
        assert schema_of(await client.list_tools(), DRIFT_TOOL)["required"] == ["message"]
        assert len(notes) == 1


async def test_announced_drift_reaches_2026_listeners(demo_control: Path) -> None:
    async with (
        open_client(demo_params(demo_control), mode="2026-07-28") as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        write_control(demo_control, drift=True, notify=True)
        event = await asyncio.wait_for(anext(subscription), 10)
        assert isinstance(event, ToolsListChanged)
        assert DRIFT_PARAM in schema_of(await client.list_tools(), DRIFT_TOOL)["required"]


async def test_drift_in_place_at_start_and_bad_control_ignored(demo_control: Path) -> None:
    write_control(demo_control, drift=True, notify=False)
    async with open_client(demo_params(demo_control), mode="auto") as client:
        assert DRIFT_PARAM in schema_of(await client.list_tools(), DRIFT_TOOL)["required"]
        demo_control.write_text("{not json", encoding="utf-8")
        # An unreadable control file changes nothing.
        assert DRIFT_PARAM in schema_of(await client.list_tools(), DRIFT_TOOL)["required"]
        demo_control.unlink()
        assert schema_of(await client.list_tools(), DRIFT_TOOL)["required"] == ["message"]


async def test_reword_rewrites_only_the_description(demo_control: Path) -> None:
    """The second drift (`demo --keep` leaves its hold open): same schema, new description."""
    async with open_client(demo_params(demo_control), mode="legacy") as client:
        before = {t.name: t for t in (await client.list_tools()).tools}[REWORD_TOOL]
        write_control(demo_control, drift=False, notify=False, reword=True)
        after = {t.name: t for t in (await client.list_tools()).tools}[REWORD_TOOL]
        assert after.description == REWORDED_DESCRIPTION != before.description
        assert after.input_schema == before.input_schema
        write_control(demo_control, drift=False, notify=False, reword=False)
        again = {t.name: t for t in (await client.list_tools()).tools}[REWORD_TOOL]
        assert again.description == before.description


def test_help_names_the_tools() -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "mcpward.demo.server", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "read_config" in out and "--control" in out


@pytest.mark.parametrize("value", ['{"drift": "yes"}', "[1, 2]"])
def test_control_file_must_hold_booleans(tmp_path: Path, value: str) -> None:
    from mcpward.demo.server import _read_control

    path = tmp_path / "c.json"
    path.write_text(value, encoding="utf-8")
    assert _read_control(path) is None
