"""An upstream whose command does not exist: the client and the log get the command and the OS
error, and no "started" line comes first (issue #25, section 4)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.relay.conftest import GatewayFactory

MISSING = {
    "id": "gone",
    "command": "/nonexistent/mcp-server-gone",
    "restart": {"initial_backoff_s": 0.05, "max_backoff_s": 0.2},
}


async def test_a_missing_command_is_named_to_the_client_and_the_log(
    gateway: GatewayFactory, tmp_path: Path
) -> None:
    async with gateway([MISSING], initialize=False) as peer:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
        reply = await peer.request("initialize", hello)
        error = reply["error"]
        assert error["code"] == -32011, reply
        assert error["data"]["reason"] == "not_connected"
        problem = (
            "command '/nonexistent/mcp-server-gone' does not exist (No such file or directory)"
        )
        assert error["data"]["problem"] == problem
        assert problem in error["message"]
        log = tmp_path / "gateway.log"
        for _ in range(100):
            if log.exists() and "cannot start" in log.read_text():
                break
            await asyncio.sleep(0.05)
        text = log.read_text()
        assert f"upstream gone cannot start: {problem}" in text
        assert "upstream gone started (pid" not in text
