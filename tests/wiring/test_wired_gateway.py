"""A wired entry started the way a client starts it: the gateway runs, the server behind it gets
the entry's env (passed on by name), and the gateway pins it under the wired upstream id."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from mcpward.store.pins_sqlite import SqlitePinStore
from mcpward.wiring.clients import CLIENTS
from mcpward.wiring.document import read_document
from tests.support.gateway import open_client
from tests.wiring.support import mcpward

ECHO = Path(__file__).resolve().parents[1] / "fixtures" / "echo_upstream.py"


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("MCPWARD_STATE_DIR", str(state))
    return state


async def test_a_wired_server_gets_its_env_through_the_gateway(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    entry = {
        "command": sys.executable,
        "args": [str(ECHO)],
        "env": {"ECHO_TOOLS": "env_reached_the_server", "ECHO_NAME": "wired"},
    }
    path.write_text(json.dumps({"mcpServers": {"echo server": entry}}, indent=2))
    assert mcpward("wire", "claude-desktop", "--config-file", str(path)).code == 0

    (wired,) = read_document(path, CLIENTS["claude-desktop"]).entries
    gateway_state = tmp_path / "gateway-state"
    # what Claude Desktop does: start `command args` with the entry's env on top of its own
    params = StdioServerParameters(
        command=wired.command,
        args=wired.args,
        env={**wired.node.value["env"], "MCPWARD_STATE_DIR": str(gateway_state)},
    )
    async with open_client(params) as client:
        tools = await client.list_tools()
    assert [tool.name for tool in tools.tools] == ["env_reached_the_server"]
    # the control: without --pass-env the gateway gives the server only a minimal environment
    head = wired.args[: wired.args.index("--")]
    bare = [a for i, a in enumerate(head) if "--pass-env" not in (a, head[i - 1] if i else "")]
    params.args = bare + wired.args[len(head) :]
    async with open_client(params) as client:
        tools = await client.list_tools()
    assert "env_reached_the_server" not in [tool.name for tool in tools.tools]
    store = SqlitePinStore(gateway_state)
    try:
        assert store.upstreams() == ["echo-server"]
    finally:
        store.close()
