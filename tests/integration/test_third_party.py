"""Third-party clients and servers through `mcpward run`: the MCP Inspector CLI (Node 22), the mcp
SDK client in both eras, server-everything, mcp-server-time and the demo server, alone and together.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from tests.support import paths
from tests.support.gateway import (
    ClientMode,
    GatewayClientFactory,
    demo_upstream,
    everything_upstream,
    gateway_argv,
    gateway_params,
    open_client,
    quick_argv,
    time_upstream,
    tool_filter_guard,
    wait_for_tool,
    write_gateway_config,
)
from tests.support.processes import assert_no_survivors, tree_of, wait_until_gone
from tests.support.raw import RawStdioSession

DENIED = -32013
INSPECTOR_TIMEOUT_S = 90


def marked_everything(tmp_path: Path, upstream_id: str = "everything") -> dict[str, Any]:
    """server-everything started through a symlink under tmp_path, so its command line names this
    test and a surviving (orphaned) process can be found by that path alone."""
    package = paths.npm_package(paths.SERVER_EVERYTHING)
    link = tmp_path / "marked-server-everything"
    if not link.exists():
        link.symlink_to(package, target_is_directory=True)
    entry = paths.npm_bin(paths.SERVER_EVERYTHING).relative_to(package)
    return {
        "id": upstream_id,
        "kind": "stdio",
        "command": str(paths.node22()),
        "args": [str(link / entry), "stdio"],
    }


def run_inspector(
    tmp_path: Path, options: Sequence[str], target: Sequence[str], *, quiet: bool = True
) -> tuple[int, Any, str]:
    """Run the Inspector CLI against a stdio target; returns (exit code, parsed stdout, stderr).
    `quiet=False` leaves out `-q`: status lines and warnings may go to stderr."""
    home = tmp_path / "inspector-home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        # The Inspector keeps a catalog under HOME; keep it out of the developer's home.
        "HOME": str(home),
        "MCP_CATALOG_PATH": str(home / "catalog.json"),
    }
    argv = [
        *paths.inspector_cli_command(),
        *(["-q"] if quiet else []),
        "--format",
        "json",
        # The gateway must keep its state in this test's directory (the Inspector passes only
        # a minimal environment to the stdio server, plus these).
        "-e",
        f"MCPWARD_STATE_DIR={tmp_path / 'state'}",
        *options,
        # A bare `--` ends the Inspector's options: the gateway's own `--` then reaches it intact.
        "--",
        *target,
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=INSPECTOR_TIMEOUT_S, env=env, check=False
    )
    # Results go to stdout; a failure is one JSON line on stderr.
    reply = done.stdout.strip() or done.stderr.strip()
    try:
        parsed = json.loads(reply.splitlines()[-1]) if reply else None
    except ValueError:
        parsed = None
    return done.returncode, parsed, done.stderr


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


# --- MCP Inspector CLI (Node 22) -------------------------------------------------------------


def test_what_the_inspector_cli_shows_of_a_hold(tmp_path: Path) -> None:
    """docs/contracts.md, "Which clients show what": the held tool is listed with its pinned schema
    and the note; the call's error envelope carries the -32010 sentence; the notifications/message
    warning reaches the Inspector but its CLI mode prints none of it (Inspector 2.12.0)."""
    from tests.contracts.test_e2e_gateway import fixture_upstream, rug_pull, set_scenario

    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    upstream = fixture_upstream("fx", control, tmp_path / "calls.log")
    target = gateway_argv(write_gateway_config(tmp_path, [upstream], guards=[rug_pull()]))
    code, listed, err = run_inspector(tmp_path, ["--method", "tools/list"], target)
    assert code == 0, err  # the pins are made
    set_scenario(control, "added_required", notify=False)

    wire = tmp_path / "to-the-inspector.jsonl"  # what the gateway sent it, copied by tee
    teed = ["sh", "-c", f'"$@" | tee {wire}', "sh", *target]
    code, listed, err = run_inspector(tmp_path, ["--method", "tools/list"], teed, quiet=False)
    assert code == 0, err
    (held,) = [t for t in listed["result"]["tools"] if t["name"] == "make_report"]
    assert "[mcpward: HELD." in held["description"]
    assert "owner" not in held["inputSchema"]["properties"]  # the pinned schema
    sent = [json.loads(line) for line in wire.read_text(encoding="utf-8").splitlines()]
    (warning,) = [m for m in sent if m.get("method") == "notifications/message"]
    assert "mcpward held tool 'make_report'" in warning["params"]["data"]
    assert "mcpward held" not in err  # sent, but the CLI mode shows nothing of it

    call = ["--method", "tools/call", "--tool-name", "make_report"]
    code, refused, err = run_inspector(
        tmp_path, [*call, "--tool-args-json", '{"title":"t","owner":"o"}'], target
    )
    assert code == 1, err
    assert refused["error"]["message"].startswith("mcpward held this call before it ran")
    assert "mcpward pins accept fx make_report --hash" in refused["error"]["message"]
    assert_no_survivors(str(tmp_path))


def test_inspector_lists_and_calls_tools_through_the_gateway(tmp_path: Path) -> None:
    config = write_gateway_config(
        tmp_path, [marked_everything(tmp_path)], guards=[tool_filter_guard("get-env")]
    )
    target = gateway_argv(config)

    code, listed, err = run_inspector(tmp_path, ["--method", "tools/list"], target)
    assert code == 0, err
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
    assert "get-env" not in names  # hidden by tool_filter

    code, called, err = run_inspector(
        tmp_path,
        ["--method", "tools/call", "--tool-name", "echo", "--tool-args-json", '{"message":"hi"}'],
        target,
    )
    assert code == 0, err
    assert called["result"]["content"][0]["text"] == "Echo: hi"

    # The Inspector checks tools/list before calling; a hidden tool is "not found" (exit 5).
    code, refused, err = run_inspector(
        tmp_path, ["--method", "tools/call", "--tool-name", "get-env"], target
    )
    assert code == 5, err
    assert refused["error"]["code"] == "tool_not_found"

    assert_no_survivors(str(tmp_path))


def test_inspector_quick_form_in_both_eras(tmp_path: Path) -> None:
    everything = marked_everything(tmp_path)
    code, called, err = run_inspector(
        tmp_path,
        ["--method", "tools/call", "--tool-name", "get-sum", "--tool-args-json", '{"a":2,"b":3}'],
        quick_argv([everything["command"], *everything["args"]], upstream_id="everything"),
    )
    assert code == 0, err
    assert called["result"]["content"][0]["text"] == "The sum of 2 and 3 is 5."

    time_server = time_upstream()
    code, called, err = run_inspector(
        tmp_path,
        [
            "--protocol-era",
            "modern",
            "--method",
            "tools/call",
            "--tool-name",
            "get_current_time",
            "--tool-args-json",
            '{"timezone":"UTC"}',
        ],
        quick_argv([time_server["command"], *time_server["args"]], upstream_id="time"),
    )
    assert code == 0, err
    assert called["result"]["structuredContent"]["timezone"] == "UTC"
    assert_no_survivors(str(tmp_path))


# --- mcp SDK client --------------------------------------------------------------------------


async def test_sdk_client_with_mcp_server_time_in_both_eras(
    tmp_path: Path, client_mode: ClientMode
) -> None:
    config = write_gateway_config(
        tmp_path, [time_upstream()], guards=[tool_filter_guard("convert_time")]
    )
    async with open_client(gateway_params(config), mode=client_mode) as client:
        expected = "2025-11-25" if client_mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected

        names = [tool.name for tool in (await client.list_tools()).tools]
        gateway_tree = tree_of(str(config))
        assert len(gateway_tree) >= 2, "expected the gateway and its upstream to be running"
        assert names == ["get_current_time"]  # one upstream: not prefixed; convert_time hidden
        result = await client.call_tool("get_current_time", {"timezone": "UTC"})
        assert not result.is_error
        assert result.structured_content is not None
        assert result.structured_content["timezone"] == "UTC"

        with pytest.raises(MCPError) as denied:
            await client.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"},
            )
        assert denied.value.code == DENIED
        assert denied.value.data["guard"] == "tool_filter"
        assert denied.value.data["code"] == "tool_not_allowed"

        # The session goes on after a denial.
        again = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        assert again.structured_content is not None
        assert again.structured_content["timezone"] == "Asia/Tokyo"
    assert wait_until_gone(gateway_tree) == []


async def test_server_to_client_requests_and_progress_pass_through(
    gateway_client: GatewayClientFactory,
) -> None:
    """sampling/createMessage, elicitation/create and roots/list go upstream→client and back;
    progress notifications reach the caller (server-everything, handshake era only)."""
    seen: dict[str, Any] = {}

    async def sampling(_ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        seen["sampling"] = params
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled through mcpward"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def elicitation(_ctx: Any, params: Any) -> types.ElicitResult:
        seen["elicitation"] = params
        return types.ElicitResult(
            action="accept", content={"name": "Ada", "check": True, "email": "ada@example.com"}
        )

    async def roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri="file:///srv/project", name="project")]  # type: ignore[arg-type]
        )

    async with gateway_client(
        [everything_upstream()],
        guards=[],
        mode="legacy",
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=roots,
    ) as client:
        await wait_for_tool(client, "trigger-sampling-request")
        sampled = await client.call_tool("trigger-sampling-request", {"prompt": "say hi"})
        assert "sampled through mcpward" in text_of(sampled)
        assert "say hi" in seen["sampling"].messages[0].content.text

        await wait_for_tool(client, "trigger-elicitation-request")
        elicited = await client.call_tool("trigger-elicitation-request", {})
        assert not elicited.is_error
        assert "Ada" in text_of(elicited)
        assert seen["elicitation"].message.startswith("Please provide inputs")

        await wait_for_tool(client, "get-roots-list")
        listed_roots = await client.call_tool("get-roots-list", {})
        assert "file:///srv/project" in text_of(listed_roots)

        seen_progress: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen_progress.append(progress)

        done = await client.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress_callback=on_progress,
        )
        assert "completed" in text_of(done)
        assert seen_progress == [1.0, 2.0, 3.0]


async def test_cancellation_reaches_the_upstream(tmp_path: Path) -> None:
    """A cancelled call gets no response: server-everything (TS SDK) drops the result of a request
    whose notifications/cancelled reached it. The second, identical call started later finishes
    later, so if the cancel were lost the first call's response would come before it."""
    config = write_gateway_config(tmp_path, [everything_upstream()], guards=[])
    session = await RawStdioSession.start(gateway_argv(config))
    try:
        opened = await session.initialize()
        assert "result" in opened, opened
        slow = {"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 1}}
        await session.send(
            {"jsonrpc": "2.0", "id": "first", "method": "tools/call", "params": slow}
        )
        await session.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "first", "reason": "test"},
            }
        )
        await session.send(
            {"jsonrpc": "2.0", "id": "second", "method": "tools/call", "params": slow}
        )
        answered: list[Any] = []
        while "second" not in answered:
            message = await session.receive(timeout=30)
            if "method" not in message:
                answered.append(message.get("id"))
        assert "first" not in answered
        # The session stays usable.
        pong = await session.request("ping")
        assert pong.get("result") == {}
    finally:
        await session.close()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_three_upstreams_aggregated(tmp_path: Path, mode: ClientMode) -> None:
    config = write_gateway_config(
        tmp_path,
        [everything_upstream(), time_upstream(), demo_upstream()],
        guards=[tool_filter_guard("get-env", upstream="everything")],
    )
    async with open_client(gateway_params(config), mode=mode) as client:
        await wait_for_tool(client, "time__get_current_time")
        gateway_tree = tree_of(str(config))
        assert len(gateway_tree) >= 4, "expected the gateway and its three upstreams"
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"everything__echo", "time__get_current_time", "demo__add"} <= names
        assert not any(name.count("__") != 1 for name in names), names
        assert "everything__get-env" not in names

        echoed = await client.call_tool("everything__echo", {"message": "one"})
        assert text_of(echoed) == "Echo: one"
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert now.structured_content is not None
        assert now.structured_content["timezone"] == "UTC"
        total = await client.call_tool("demo__add", {"a": 40, "b": 2})
        assert total.structured_content == {"result": 42}

        # Concurrent calls to different upstreams come back to the right callers.
        results = await asyncio.gather(
            *(client.call_tool("demo__echo", {"message": f"m{i}"}) for i in range(5)),
            *(client.call_tool("everything__echo", {"message": f"e{i}"}) for i in range(5)),
        )
        texts = [text_of(r) for r in results]
        assert texts == [f"m{i}" for i in range(5)] + [f"Echo: e{i}" for i in range(5)]

        with pytest.raises(MCPError) as denied:
            await client.call_tool("everything__get-env", {})
        assert denied.value.code == DENIED

        prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
        assert "demo__summarize" in prompts
    assert wait_until_gone(gateway_tree) == []
