"""WASM and HTTP hook guards through the real gateway (`mcpward run --config`), via the SDK client.

The upstream is the raw echo server (tests/fixtures/echo_upstream.py) listing the fixture guest's
tool names; only `echo` answers, so an allowed call to another name comes back "Unknown tool".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcpward.protocol.errors import DENIED
from tests.support.gateway import gateway_argv, gateway_params, open_client, write_gateway_config
from tests.wasm import building
from tests.wasm.hook_server import SECRET, HookServer

ECHO = str(Path(__file__).resolve().parents[1] / "fixtures" / "echo_upstream.py")
NAMES = "echo,rm_rf,fail,spin,trap,grow,badjson,fs,net,hidden,crash,stray"


def echo_upstream(**env: str) -> dict[str, Any]:
    return {
        "id": "echo",
        "command": sys.executable,
        "args": [ECHO],
        "env": {"ECHO_TOOLS": NAMES, **env},
    }


def wasm_guard(module: Path, guard_id: str, priority: int = 50, **config: Any) -> dict[str, Any]:
    return {
        "kind": "wasm",
        "id": guard_id,
        "priority": priority,
        "runs_on": ["tools_list", "tool_invoke", "tool_result"],
        "timeout_ms": config.pop("timeout_ms", 1000),
        "config": {"module_path": str(module), "sha256": building.sha256_of(module), **config},
    }


def start(tmp_path: Path, state_dir: Path, guards: list[dict[str, Any]]) -> Path:
    return write_gateway_config(
        tmp_path,
        [echo_upstream()],
        guards=guards,
        gateway={"relist_interval_s": 0},
        extra={"state_dir": str(state_dir)},
    )


async def denied(client: Any, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    with pytest.raises(MCPError) as info:
        await client.call_tool(tool, arguments or {})
    assert info.value.code == DENIED, info.value
    data: dict[str, Any] = info.value.data
    return data


def echoed(result: Any) -> dict[str, Any]:
    """The params the echo upstream received (its first text block)."""
    params: dict[str, Any] = json.loads(result.content[0].text)
    return params


def last_text(result: Any) -> str:
    """Where the gateway appends guard warnings."""
    text: str = result.content[-1].text
    return text


async def test_fixture_and_probe_guards_through_the_gateway(
    tmp_path: Path, wasm_state_dir: Path, fixture_wasm: Path, probe_wasm: Path
) -> None:
    keep = [{"name": n} for n in NAMES.split(",") if n != "hidden"]
    config = start(
        tmp_path,
        wasm_state_dir,
        [
            wasm_guard(
                fixture_wasm,
                "fixture",
                priority=10,
                timeout_ms=300,
                fuel=10**13,  # only the epoch deadline can stop the spin
                memory_limit_mb=1,
                wasm_config={"tools_list_action": {"type": "replace_tools", "tools": keep}},
            ),
            wasm_guard(probe_wasm, "probe", priority=20, needs_wasi=True),
            wasm_guard(
                fixture_wasm,
                "rewriter",
                priority=30,
                wasm_config={
                    "call_action": {
                        "type": "redact_fields",
                        "paths": ["$.secret"],
                        "replacement": "***",
                    },
                    "response_action": {"type": "add_warning", "message": "checked by wasm"},
                },
            ),
        ],
    )
    async with open_client(gateway_params(config)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "hidden" not in names and "echo" in names  # modify: replace_tools

        assert echoed(await client.call_tool("echo", {"x": 1}))["arguments"] == {"x": 1}  # allow

        data = await denied(client, "rm_rf")  # deny
        assert data == {
            "guard": "fixture",
            "code": "blocked_tool",
            "message": "rm_rf is blocked by the fixture guard",
            "details": {"tool": "rm_rf"},
        }

        assert (await denied(client, "fail"))["code"] == "guard_error"  # err(...) fails closed
        assert (await denied(client, "badjson"))["code"] == "guard_error"  # off-contract modify

        assert (await denied(client, "spin"))["code"] == "guard_timeout"
        assert (await denied(client, "trap"))["code"] == "guard_error"
        assert (await denied(client, "grow"))["code"] == "guard_error"  # refused at 1 MiB
        assert echoed(await client.call_tool("echo", {"after": "trap"}))["arguments"] == {
            "after": "trap"
        }

        result = await client.call_tool("echo", {"secret": "hunter2", "keep": "me"})
        assert echoed(result)["arguments"] == {"secret": "***", "keep": "me"}  # what upstream got
        assert last_text(result) == "[mcpward warning] checked by wasm"

        fs = await denied(client, "fs")  # the probe saw no directory and got no socket
        assert (fs["guard"], fs["code"]) == ("probe", "fs_none")
        assert (await denied(client, "net"))["code"] == "socket_denied"

    log = (tmp_path / "gateway.log").read_text()
    assert "wasm guard fixture at tool_invoke: timeout" in log
    assert "wasm guard fixture at tool_invoke: trap" in log


async def test_example_guards_through_the_gateway(
    tmp_path: Path, wasm_state_dir: Path, wat_example_wasm: Path, python_example_wasm: Path
) -> None:
    config = start(
        tmp_path,
        wasm_state_dir,
        [
            wasm_guard(
                wat_example_wasm,
                "blocklist",
                priority=10,
                wasm_config={"blocked_tools": "crash,hang"},
            ),
            wasm_guard(
                python_example_wasm,
                "patterns",
                priority=20,
                needs_wasi=True,
                wasm_config={
                    "blocked_patterns": ["/etc/shadow"],
                    "secret_argument_keys": ["password"],
                    "hidden_phrases": ["stray tool"],
                    "warn_phrases": ["BEGIN PRIVATE KEY"],
                },
            ),
        ],
    )
    async with open_client(gateway_params(config)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "stray" not in names and "echo" in names
        crash = await denied(client, "crash")
        assert (crash["guard"], crash["code"]) == ("blocklist", "blocked_tool")
        shadow = await denied(client, "echo", {"path": "/etc/shadow"})
        assert (shadow["guard"], shadow["code"]) == ("patterns", "blocked_pattern")
        result = await client.call_tool(
            "echo", {"user": "a", "password": "p", "key": "BEGIN PRIVATE KEY"}
        )
        assert echoed(result)["arguments"] == {
            "user": "a",
            "password": "[REDACTED]",
            "key": "BEGIN PRIVATE KEY",
        }
        assert last_text(result).startswith("[mcpward warning] the result of echo mentions")


def test_a_module_with_another_hash_is_refused(tmp_path: Path, fixture_wasm: Path) -> None:
    guard = wasm_guard(fixture_wasm, "fixture")
    guard["config"]["sha256"] = "ab" * 32
    config = start(tmp_path, tmp_path / "state", [guard])
    done = subprocess.run(
        gateway_argv(config), input=b"", capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert building.sha256_of(fixture_wasm) in stderr and "pins " + "ab" * 32 in stderr


async def test_http_hook_through_the_gateway(tmp_path: Path, hook_server: HookServer) -> None:
    secret = tmp_path / "hook.key"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    hook = {
        "kind": "http_hook",
        "id": "policy",
        "runs_on": ["tool_invoke"],
        "timeout_ms": 2000,  # generous: a loaded CI machine must not turn an allow into a timeout
        "config": {"url": hook_server.url, "secret": {"file": str(secret)}},
    }
    config = start(tmp_path, tmp_path / "state", [hook])
    async with open_client(gateway_params(config)) as client:
        assert echoed(await client.call_tool("echo", {"a": 1}))["arguments"] == {"a": 1}
        hook_server.answer({"decision": "deny", "reason": {"code": "no", "message": "not today"}})
        assert await denied(client, "echo") == {
            "guard": "policy",
            "code": "no",
            "message": "not today",
        }
        hook_server.answer(
            {"decision": "modify", "action": {"type": "redact_fields", "paths": ["$.token"]}}
        )
        result = await client.call_tool("echo", {"token": "t0k3n"})
        assert echoed(result)["arguments"] == {"token": "[REDACTED]"}
        hook_server.answer({"decision": "allow"}, delay=6.0)
        assert (await denied(client, "echo"))["code"] == "guard_timeout"
        hook_server.answer(b"<html>oops</html>")
        assert (await denied(client, "echo"))["code"] == "guard_error"
    assert hook_server.bad_signatures == 0
    assert hook_server.seen[0]["operation"] == {
        "type": "call_tool",
        "data": {"name": "echo", "arguments": {"a": 1}},
    }
