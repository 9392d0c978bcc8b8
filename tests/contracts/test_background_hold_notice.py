"""A HOLD the gateway makes on its own re-read (after the upstream's list_changed, or on the
periodic re-list) tells the client at once, with the same `notifications/message` warning a hold
made during the client's own tools/list gets, and only once (issue #25)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.contracts.test_e2e_gateway import fixture_upstream, raw_gateway, rug_pull, set_scenario
from tests.support.gateway import write_gateway_config

HELD = "mcpward held tool 'make_report' of upstream 'fx'"
WAIT_S = 30.0  # a hang guard only: the notice comes right after the gateway's re-read


def held_warnings(frames: list[dict[str, Any]]) -> list[str]:
    return [
        f["params"]["data"]
        for f in frames
        if f.get("method") == "notifications/message" and HELD in str(f["params"].get("data"))
    ]


@pytest.mark.parametrize("how", ["list_changed", "periodic"])
async def test_a_hold_made_by_the_gateways_own_read_reaches_the_client_once(
    tmp_path: Path, how: str
) -> None:
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    # periodic: the server changes silently and only the gateway's timer re-reads it
    gateway = {"relist_interval_s": 0.3} if how == "periodic" else {"relist_interval_s": 0}
    config = write_gateway_config(
        tmp_path,
        [fixture_upstream("fx", control, tmp_path / "calls.log")],
        guards=[rug_pull()],
        gateway=gateway,
    )
    async with raw_gateway(config) as gw:
        listed = await gw.request("tools/list", {})  # the baseline: pins made
        assert "make_report" in {t["name"] for t in listed["result"]["tools"]}
        set_scenario(control, "added_required", notify=how == "list_changed")
        frames: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        while not held_warnings(frames) and loop.time() < deadline:
            try:
                frames.append(await gw.receive(timeout=max(0.01, deadline - loop.time())))
            except TimeoutError:
                break
        assert held_warnings(frames), f"no HOLD warning without a client list; got {frames}"
        assert all("id" not in f for f in frames), "the client asked nothing, yet got an answer"
        (warning,) = held_warnings(frames)
        note = next(f for f in frames if f.get("method") == "notifications/message")["params"]
        assert note["level"] == "warning" and note["logger"] == "mcpward"
        assert "pins diff fx make_report" in warning and "pins accept fx make_report" in warning
        if how == "list_changed":
            assert any(f.get("method") == "notifications/tools/list_changed" for f in frames)
        # the client's own list now: the held tool is listed as pinned, the warning not repeated
        await gw.send({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}})
        after: list[dict[str, Any]] = []
        while not after or after[-1].get("id") != 99:
            after.append(await gw.receive())
        tools = {t["name"]: t for t in after[-1]["result"]["tools"]}
        assert "[mcpward: HELD." in tools["make_report"]["description"]
        assert held_warnings(after) == []
