"""Protocol features the gateway does not relay because what they carry could not be judged.

2025-11-25's experimental tasks (the `io.modelcontextprotocol/tasks` extension in 2026-07-28) hand a
tool's real result over later through `tasks/result`, past the result-phase guards (secret
redaction, injection checks) and without a receipt. So the gateway behaves as a receiver without
task support does under the spec: it advertises no `tasks` capability in either direction, drops
the `task` augmentation of a request (the upstream then answers normally, through every guard), and
refuses the `tasks/*` methods.
"""

from __future__ import annotations

from typing import Any

TASKS_CAPABILITY = "tasks"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_AUGMENTATION = "task"
TASKS_METHOD_PREFIX = "tasks/"
REFUSAL = (
    "tasks are not relayed by mcpward: a task's deferred result would bypass the result guards "
    "and its receipt; call the tool without task augmentation"
)


def is_unrelayed_method(method: str) -> bool:
    """A request the gateway refuses instead of forwarding (`tasks/get`, `tasks/result`, ...)."""
    return method.startswith(TASKS_METHOD_PREFIX)


def without_tasks(capabilities: Any) -> Any:
    """A capabilities object (a server's or a client's) with task support removed; as is when
    there is none to remove (no copy on the common path)."""
    if not isinstance(capabilities, dict):
        return capabilities
    extensions = capabilities.get("extensions")
    has_extension = isinstance(extensions, dict) and TASKS_EXTENSION in extensions
    if TASKS_CAPABILITY not in capabilities and not has_extension:
        return capabilities
    stripped = {k: v for k, v in capabilities.items() if k != TASKS_CAPABILITY}
    if has_extension:
        assert isinstance(extensions, dict)
        stripped["extensions"] = {k: v for k, v in extensions.items() if k != TASKS_EXTENSION}
    return stripped


def with_tasks_removed(result: Any) -> Any:
    """An initialize or server/discover result whose `capabilities` advertise no tasks."""
    if not isinstance(result, dict) or not isinstance(result.get("capabilities"), dict):
        return result
    capabilities = without_tasks(result["capabilities"])
    if capabilities is result["capabilities"]:
        return result
    return {**result, "capabilities": capabilities}


def without_task_augmentation(params: dict[str, Any]) -> dict[str, Any]:
    """Request params without the `task` field, so the upstream answers in the same request."""
    if TASK_AUGMENTATION not in params:
        return params
    return {k: v for k, v in params.items() if k != TASK_AUGMENTATION}
