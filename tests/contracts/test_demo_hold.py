"""The function `mcpward demo` uses for its HOLD step, against the bundled demo server through the
real gateway: a silent required parameter, the held call, the banner and diff, the accept."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from rich.console import Console

from mcpward.contracts.hold_walkthrough import accept_held_call, show_held_call
from mcpward.demo.server import write_control
from tests.support.gateway import demo_upstream, gateway_params, open_client, write_gateway_config


async def test_demo_rug_pull_is_held_shown_and_accepted(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    write_control(control, drift=False, notify=False)
    guards = [{"kind": "rug_pull", "runs_on": ["tools_list", "tool_invoke"]}]
    config = write_gateway_config(tmp_path, [demo_upstream(control=control)], guards=guards)
    state = tmp_path / "state"
    async with open_client(gateway_params(config), mode="legacy") as client:
        await client.list_tools()
        assert not (await client.call_tool("echo", {"message": "hi"})).is_error
        write_control(control, drift=True, notify=True)
        await client.list_tools()  # what the host does on list_changed
        with pytest.raises(MCPError) as held:
            await client.call_tool("echo", {"message": "hi", "token": "t"})
        assert held.value.error.code == -32010
        data = held.value.error.data
        out = io.StringIO()
        show_held_call(Console(file=out, width=120, force_terminal=False), state, data)
        shown = out.getvalue()
        assert (
            "HOLD (contract_drift)" in shown
            and "added-required-param" in shown
            and "token" in shown
        )
        command = accept_held_call(state, data)
        assert command.startswith("mcpward pins accept demo echo --hash ")
        result = await client.call_tool("echo", {"message": "hi", "token": "t"})
        assert not result.is_error
