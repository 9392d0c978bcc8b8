"""Guard kind `http_hook` against a real HTTP server on 127.0.0.1 started by the test.

The server checks the gateway's HMAC signature the way a hook author would, then answers
whatever the test queued: a decision, a slow answer, or something malformed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpward.config.loader import ConfigError, parse_config
from mcpward.guards.http_hook import HttpHookGuard, HttpHookOptions
from mcpward.pipeline import Deny, GuardContext, GuardSpec, Identity, Phase
from mcpward.pipeline.executor import Outcome, Pipeline
from tests.wasm.hook_server import SECRET, HookServer
from tests.wasm.services import services


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    return "HOOK_SECRET"


@pytest.fixture
async def make_hook(secret_env: str, tmp_path: Path) -> Any:
    made: list[HttpHookGuard] = []

    async def make(
        url: str, timeout_ms: int = 2000, failure_mode: str = "fail_closed"
    ) -> HttpHookGuard:
        config = {"url": url, "secret": {"env": secret_env}}
        spec = GuardSpec.model_validate(
            {
                "kind": "http_hook",
                "id": "hook",
                "runs_on": sorted(p.value for p in HttpHookGuard.supported_phases()),
                "timeout_ms": timeout_ms,
                "failure_mode": failure_mode,
                "config": config,
            }
        )
        guard = HttpHookGuard(spec, HttpHookOptions.model_validate(config))
        await guard.attach(services(tmp_path))
        made.append(guard)
        return guard

    yield make
    for guard in made:
        await guard.close()


def ctx(method: str = "tools/call") -> GuardContext:
    return GuardContext(
        server_name="github",
        method=method,
        identity=Identity(sub="user123", groups=("developers",)),
    )


async def invoke(guard: HttpHookGuard, args: dict[str, Any]) -> Outcome:
    return await Pipeline([guard]).run((Phase.TOOL_INVOKE,), "file_reader", args, ctx())


async def test_allow_sends_the_documented_signed_body(
    hook_server: HookServer, make_hook: Any
) -> None:
    guard = await make_hook(hook_server.url)
    out = await invoke(guard, {"path": "/srv/a"})
    assert out.allowed and out.runs[0].outcome == "allow"
    assert hook_server.bad_signatures == 0
    (body,) = hook_server.seen
    assert body == {
        "phase": "tool_invoke",
        "guard": "hook",
        "operation": {
            "type": "call_tool",
            "data": {"name": "file_reader", "arguments": {"path": "/srv/a"}},
        },
        "context": {
            "server_name": "github",
            "identity": {"sub": "user123", "email": None, "groups": ["developers"], "claims": {}},
            "metadata": {"method": "tools/call", "era": "handshake"},
        },
    }


async def test_deny(hook_server: HookServer, make_hook: Any) -> None:
    guard = await make_hook(hook_server.url)
    hook_server.answer(
        {
            "decision": "deny",
            "reason": {
                "code": "policy_violation",
                "message": "Tool 'file_reader' not allowed for this user",
                "details": {"required_group": "admins"},
            },
        }
    )
    out = await invoke(guard, {})
    assert isinstance(out.stop, Deny) and out.stop.code == "policy_violation"
    assert out.stop.details == {"required_group": "admins"}


async def test_modify_actions(hook_server: HookServer, make_hook: Any) -> None:
    guard = await make_hook(hook_server.url)
    hook_server.answer(
        {"decision": "modify", "action": {"type": "redact_fields", "paths": ["$.token"]}}
    )
    out = await invoke(guard, {"token": "abc", "path": "/x"})
    assert out.allowed and out.payload == {"token": "[REDACTED]", "path": "/x"}

    hook_server.answer(
        {"decision": "modify", "action": {"type": "add_warning", "message": "audited"}}
    )
    assert (await invoke(guard, {})).warnings == ["audited"]

    tools = [{"name": "file_reader", "inputSchema": {}}, {"name": "file_writer", "inputSchema": {}}]
    hook_server.answer(
        {
            "decision": "modify",
            "action": {"type": "replace_tools", "tools": [{"name": "file_reader"}]},
        }
    )
    listed = await Pipeline([guard]).run((Phase.TOOLS_LIST,), None, tools, ctx("tools/list"))
    assert listed.payload == [{"name": "file_reader", "inputSchema": {}}]
    assert hook_server.seen[-1]["operation"] == {"type": "list_tools", "data": {"tools": tools}}


async def test_slow_hook_hits_the_deadline(hook_server: HookServer, make_hook: Any) -> None:
    guard = await make_hook(hook_server.url, timeout_ms=200)
    hook_server.answer({"decision": "allow"}, delay=1.5)
    out = await invoke(guard, {})
    assert out.stop is not None and out.stop.code == "guard_timeout"
    assert out.runs[0].outcome == "timeout"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, b"not json"),
        (200, {"decision": "maybe"}),
        (200, {"decision": "deny", "reason": {"code": "", "message": "x"}}),
        (
            200,
            {
                "decision": "modify",
                "action": {"type": "replace_tools", "tools": [{"name": "invented"}]},
            },
        ),
        (500, {"decision": "allow"}),
    ],
)
async def test_malformed_answers_follow_the_failure_mode(
    hook_server: HookServer, make_hook: Any, status: int, body: Any
) -> None:
    closed = await make_hook(hook_server.url)
    hook_server.answer(body, status=status)
    out = await invoke(closed, {})
    assert out.stop is not None and out.stop.code == "guard_error"

    opened = await make_hook(hook_server.url, failure_mode="fail_open")
    hook_server.answer(body, status=status)
    out = await invoke(opened, {})
    assert out.allowed and out.runs[0].outcome == "error"


async def test_a_wrong_secret_is_rejected_by_the_hook(
    hook_server: HookServer, make_hook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_SECRET", "t" * 40)  # the gateway signs with another key
    guard = await make_hook(hook_server.url)
    out = await invoke(guard, {})
    assert hook_server.bad_signatures == 1 and out.stop is not None


def hook_config(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "upstreams": [{"id": "up", "command": "true"}],
        "guards": [
            {"kind": "http_hook", "runs_on": ["tool_invoke"], "config": {"url": url, **extra}}
        ],
    }


def test_config_refuses_plain_http_off_this_host(secret_env: str) -> None:
    with pytest.raises(ConfigError, match="must use https"):
        parse_config(hook_config("http://policy.example.com/hook", secret={"env": secret_env}))
    parse_config(hook_config("https://policy.example.com/hook", secret={"env": secret_env}))
    parse_config(hook_config("http://[::1]:8080/hook", secret={"env": secret_env}))


def test_config_refuses_a_missing_or_short_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_SECRET", raising=False)
    with pytest.raises(ConfigError, match="NO_SUCH_SECRET is not set"):
        parse_config(hook_config("http://127.0.0.1:9/hook", secret={"env": "NO_SUCH_SECRET"}))
    monkeypatch.setenv("SHORT_SECRET", "short")
    with pytest.raises(ConfigError, match="at least 32 bytes"):
        parse_config(hook_config("http://127.0.0.1:9/hook", secret={"env": "SHORT_SECRET"}))


async def test_a_private_hook_is_blocked_by_the_egress_filter(make_hook: Any) -> None:
    # 10.0.0.1 is private and not allow-listed: the egress filter refuses before connecting.
    guard = await make_hook("https://10.0.0.1/hook", timeout_ms=2000)
    out = await invoke(guard, {})
    assert out.stop is not None and out.stop.code == "guard_error"
