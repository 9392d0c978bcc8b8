"""DecisionRecords for the evidence tests: a realistic mix of calls, denials, holds and failures."""

from __future__ import annotations

import time
from typing import Any

from mcpward.evidence.record import DecisionRecord
from mcpward.pipeline.context import Identity
from mcpward.pipeline.executor import GuardRun

SECRET_ARGUMENT = "hunter2-do-not-store"
SECRET_RESULT = "sk-proj-result-text-never-stored"


def decision(i: int = 0, **overrides: Any) -> DecisionRecord:
    """Record number `i` of a repeating mix; keyword arguments override fields."""
    kind = i % 5
    runs = [GuardRun("tool_filter", "tool_filter", "tool_invoke", "allow", 0.042)]
    values: dict[str, Any] = {
        "started_at": time.time(),
        "method": "tools/call",
        "upstream": "time",
        "name": "get_current_time",
        "decision": "allow",
        "session_id": "sess-1",
        "era": "handshake",
        "identity": Identity("alice", client_id="claude-desktop"),
        "arguments": {"timezone": "Europe/Paris", "note": SECRET_ARGUMENT, "i": i},
        "result": {"content": [{"type": "text", "text": SECRET_RESULT}], "isError": False},
        "tool_definition": {"name": "get_current_time", "annotations": {"readOnlyHint": True}},
        "runs": runs,
        "gateway_ms": 0.25,
        "upstream_ms": 3.5,
    }
    if kind == 1:
        values.update(
            decision="deny",
            name="delete_file",
            result=None,
            tool_definition={"name": "delete_file", "annotations": {"destructiveHint": True}},
            runs=[
                GuardRun(
                    "tool_filter",
                    "tool_filter",
                    "tool_invoke",
                    "deny",
                    0.05,
                    code="tool_not_allowed",
                )
            ],
            stopped_by="tool_filter",
            error_code=-32013,
            upstream_ms=None,
        )
    elif kind == 2:
        values.update(
            decision="modify",
            name="read_config",
            runs=[
                *runs,
                GuardRun(
                    "secrets",
                    "secrets",
                    "tool_result",
                    "modify",
                    0.3,
                    evidence={"redactions": {"secret": {"openai_key": 2, "github_pat": 1}}},
                ),
            ],
        )
    elif kind == 3:
        values.update(
            decision="error",
            result=None,
            error_code=-32011,
            error_reason="crashed",
            upstream_ms=None,
        )
    elif kind == 4:
        values.update(
            method="tools/list",
            name=None,
            arguments=None,
            decision="modify",
            tool_definition=None,
            runs=[
                GuardRun(
                    "tool_filter",
                    "tool_filter",
                    "tools_list",
                    "modify",
                    0.1,
                    evidence={"hidden": 1},
                )
            ],
        )
    values.update(overrides)
    return DecisionRecord(**values)
