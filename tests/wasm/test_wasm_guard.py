"""The `wasm` guard kind through the real pipeline executor, with a real component in wasmtime.

The fixture guest (guests/fixture.wat) decides by tool name; see the comment at its top.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from mcpward.guards.wasm.errors import CallFailure, WasmCallError, WasmCallTimeout
from mcpward.guards.wasm.metrics import GuardMetrics
from mcpward.pipeline import Deny, GuardContext, Identity, Phase
from mcpward.pipeline.executor import Outcome, Pipeline

TOOLS = [
    {"name": "get_time", "description": "What time is it", "inputSchema": {"type": "object"}},
    {
        "name": "delete_all",
        "description": "Deletes everything",
        "inputSchema": {"type": "object"},
        "annotations": {"destructiveHint": True},
    },
]


def ctx(method: str = "tools/call") -> GuardContext:
    return GuardContext(
        server_name="up", method=method, identity=Identity(sub="alice", groups=("dev",))
    )


async def call(guard: Any, tool: str, arguments: dict[str, Any] | None = None) -> Outcome:
    return await Pipeline([guard]).run((Phase.TOOL_INVOKE,), tool, arguments or {}, ctx())


async def test_allow_deny_and_error(make_wasm_guard: Any, fixture_wasm: Path) -> None:
    guard = await make_wasm_guard(fixture_wasm)
    allowed = await call(guard, "get_time")
    assert allowed.allowed and allowed.runs[0].outcome == "allow"
    assert allowed.runs[0].evidence == {"module_sha256": guard.options.sha256}

    denied = await call(guard, "rm_rf")
    assert isinstance(denied.stop, Deny)
    assert denied.stop.code == "blocked_tool"
    assert denied.stop.message == "rm_rf is blocked by the fixture guard"
    assert denied.stop.details == {"tool": "rm_rf"}
    assert denied.stopped_by == "wg"

    failed = await call(guard, "fail")  # the guest returns err(...): fail_closed denies
    assert failed.stop is not None and failed.stop.code == "guard_error"
    assert (
        failed.runs[0].outcome == "error" and failed.runs[0].failure_mode_applied == "fail_closed"
    )


async def test_guest_error_fails_open_when_configured(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    guard = await make_wasm_guard(fixture_wasm, failure_mode="fail_open")
    out = await call(guard, "fail")
    assert out.allowed
    assert out.runs[0].outcome == "error" and out.runs[0].failure_mode_applied == "fail_open"


async def test_modify_add_warning_and_redact_fields(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    guard = await make_wasm_guard(fixture_wasm)
    warned = await call(guard, "warn")
    assert warned.allowed and warned.warnings == ["fixture warning"]
    assert warned.runs[0].outcome == "modify"

    redacted = await call(guard, "redact", {"secret": "hunter2", "keep": 1})
    assert redacted.allowed and redacted.payload == {"secret": "***", "keep": 1}


async def test_modify_replace_tools_keeps_upstream_fields(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    action = (
        '{"type": "replace_tools", "tools": [{"name": "delete_all", "description": "reviewed"}]}'
    )
    guard = await make_wasm_guard(fixture_wasm, wasm_config={"tools_list_action": action})
    out = await Pipeline([guard]).run(
        (Phase.TOOLS_LIST,), None, [dict(t) for t in TOOLS], ctx("tools/list")
    )
    assert out.allowed and out.modified
    assert out.payload == [
        {
            "name": "delete_all",
            "description": "reviewed",
            "inputSchema": {"type": "object"},
            "annotations": {"destructiveHint": True},
        }
    ]


@pytest.mark.parametrize(
    "action",
    [
        "not json",
        '{"type": "replace_tools", "tools": [{"name": "invented"}]}',
        '{"type": "explode"}',
        '{"type": "redact_fields", "paths": []}',
    ],
)
async def test_off_format_modify_is_a_guard_error(
    make_wasm_guard: Any, fixture_wasm: Path, action: str
) -> None:
    guard = await make_wasm_guard(fixture_wasm, wasm_config={"tools_list_action": action})
    out = await Pipeline([guard]).run(
        (Phase.TOOLS_LIST,), None, [dict(t) for t in TOOLS], ctx("tools/list")
    )
    assert out.stop is not None and out.stop.code == "guard_error"


async def test_replace_tools_outside_a_list_phase_is_refused(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    action = '{"type": "replace_tools", "tools": []}'
    guard = await make_wasm_guard(fixture_wasm, wasm_config={"call_action": action})
    out = await call(guard, "get_time")
    assert out.stop is not None and out.stop.code == "guard_error"


async def test_resource_request_and_tool_response(make_wasm_guard: Any, fixture_wasm: Path) -> None:
    action = '{"type": "redact_fields", "paths": ["$.content[*].text"]}'
    guard = await make_wasm_guard(fixture_wasm, wasm_config={"response_action": action})
    read = await Pipeline([guard]).run(
        (Phase.RESOURCE_REQUEST,), "file:///etc/passwd", {}, ctx("resources/read")
    )
    assert isinstance(read.stop, Deny) and read.stop.code == "no_resources"
    result = {"content": [{"type": "text", "text": "token=abc"}], "isError": False}
    out = await Pipeline([guard]).run((Phase.TOOL_RESULT,), "get_time", result, ctx())
    assert out.payload == {"content": [{"type": "text", "text": "[REDACTED]"}], "isError": False}


async def test_spin_is_stopped_by_the_epoch_deadline_and_the_next_call_works(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    guard = await make_wasm_guard(fixture_wasm, timeout_ms=100, fuel=10**13)
    out = await call(guard, "spin")
    assert out.stop is not None and out.stop.code == "guard_timeout"
    assert out.runs[0].outcome == "timeout"
    # The executor's asyncio deadline cannot stop CPU-bound wasm; the epoch interrupt does.
    with pytest.raises(WasmCallTimeout) as info:
        guard.sandbox.call("evaluate-tool-call", ["spin", "{}", guard._context(ctx())], 0.1)
    assert "interrupt" in info.value.detail
    assert (await call(guard, "get_time")).allowed


async def test_fuel_budget_stops_a_spin(make_wasm_guard: Any, fixture_wasm: Path) -> None:
    guard = await make_wasm_guard(fixture_wasm, timeout_ms=5000, fuel=100_000)
    with pytest.raises(WasmCallError) as info:
        guard.sandbox.call("evaluate-tool-call", ["spin", "{}", guard._context(ctx())], 5.0)
    assert info.value.failure is CallFailure.FUEL
    out = await call(guard, "spin")
    assert out.stop is not None and out.stop.code == "guard_error"


async def test_trap_discards_the_instance_and_the_next_call_works(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    guard = await make_wasm_guard(fixture_wasm)
    built = guard.sandbox.instances_built
    out = await call(guard, "trap")
    assert out.stop is not None and out.stop.code == "guard_error"
    assert guard.sandbox.instances_discarded == 1
    assert (await call(guard, "get_time")).allowed
    assert guard.sandbox.instances_built == built + 1


async def test_memory_growth_stops_at_the_limit(make_wasm_guard: Any, fixture_wasm: Path) -> None:
    guard = await make_wasm_guard(fixture_wasm, memory_limit_mb=1)
    answer = guard.sandbox.call("evaluate-tool-call", ["grow", "{}", guard._context(ctx())], 5.0)
    assert answer.kind == "err" and answer.payload == "memory limit reached"
    out = await call(guard, "grow")
    assert out.stop is not None and out.stop.code == "guard_error"
    assert (await call(guard, "get_time")).allowed


async def test_host_log_metric_and_config(
    make_wasm_guard: Any, fixture_wasm: Path, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = GuardMetrics()
    guard = await make_wasm_guard(
        fixture_wasm, guard_id="host-test", metrics=metrics, wasm_config={"message": "from config"}
    )
    with caplog.at_level(logging.INFO, logger="mcpward.guards.wasm"):
        assert (await call(guard, "log")).allowed
    assert any(
        "wasm guard host-test: hello from the fixture guard" in r.getMessage()
        for r in caplog.records
    )
    series = metrics.get("host-test", "fixture_calls", (("tool", "log"),))
    assert series is not None and series.count == 1 and series.last == 1.0
    denied = await call(guard, "cfg")
    assert isinstance(denied.stop, Deny) and denied.stop.message == "from config"


async def test_calls_are_counted_in_metrics(make_wasm_guard: Any, fixture_wasm: Path) -> None:
    metrics = GuardMetrics()
    guard = await make_wasm_guard(fixture_wasm, guard_id="counted", metrics=metrics)
    await call(guard, "get_time")
    await call(guard, "trap")
    allowed = metrics.get(
        "counted", "mcpward_wasm_calls", (("outcome", "allow"), ("phase", "tool_invoke"))
    )
    trapped = metrics.get(
        "counted", "mcpward_wasm_calls", (("outcome", "trap"), ("phase", "tool_invoke"))
    )
    assert allowed is not None and allowed.count == 1
    assert trapped is not None and trapped.count == 1


async def test_concurrent_calls_use_separate_instances(
    make_wasm_guard: Any, fixture_wasm: Path
) -> None:
    import asyncio

    guard = await make_wasm_guard(fixture_wasm, pool_size=3)
    outs = await asyncio.gather(*(call(guard, "rm_rf" if i % 2 else "get_time") for i in range(20)))
    assert [o.allowed for o in outs] == [i % 2 == 0 for i in range(20)]
    assert guard.sandbox.instances_built <= 3


async def test_prompt_request_reaches_the_guest(make_wasm_guard: Any, fixture_wasm: Path) -> None:
    guard = await make_wasm_guard(fixture_wasm)
    out = await Pipeline([guard]).run(
        (Phase.PROMPT_REQUEST,), "summarize", {"text": "x"}, ctx("prompts/get")
    )
    assert out.allowed and out.runs[0].outcome == "allow"
