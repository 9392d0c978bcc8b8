"""Applying a guard's Modify action to the phase payload."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from mcpward.pipeline.decisions import (
    AddWarning,
    ModifyAction,
    RedactFields,
    ReplacePayload,
    ReplaceTools,
)
from mcpward.pipeline.phases import LIST_PHASES, Phase


class ModifyError(ValueError):
    """A Modify action that cannot apply to this phase's payload (treated as a guard error)."""


@lru_cache(maxsize=512)
def _compiled(path: str) -> Any:
    import jsonpath  # only a guard that redacts by path needs it

    try:
        return jsonpath.compile(path)
    except jsonpath.JSONPathError as exc:
        raise ModifyError(f"invalid JSONPath {path!r}: {str(exc).splitlines()[0]}") from None


def redact_paths(payload: Any, paths: list[str], replacement: str) -> int:
    """Replace every value matched by the paths, in place; returns how many were replaced."""
    count = 0
    for path in paths:
        matches = list(_compiled(path).finditer(payload))
        for match in matches:
            parts = match.pointer().parts
            if not parts:
                raise ModifyError(
                    "RedactFields cannot replace the whole payload; use a deeper path"
                )
            parent: Any = payload
            for part in parts[:-1]:
                parent = parent[int(part)] if isinstance(parent, list) else parent[part]
            last = parts[-1]
            if isinstance(parent, list):
                parent[int(last)] = replacement
            else:
                parent[last] = replacement
            count += 1
    return count


def apply_modify(phase: Phase, payload: Any, action: ModifyAction, warnings: list[str]) -> Any:
    """Return the payload after the action (may be the same object, changed in place)."""
    if isinstance(action, AddWarning):
        if not isinstance(action.message, str) or not action.message:
            raise ModifyError("AddWarning needs a non-empty message")
        warnings.append(action.message)
        return payload
    if isinstance(action, ReplaceTools):
        if phase not in LIST_PHASES:
            raise ModifyError(f"ReplaceTools applies to list phases only, not {phase.value}")
        if not isinstance(action.tools, list) or not all(isinstance(t, dict) for t in action.tools):
            raise ModifyError("ReplaceTools needs a list of objects")
        return list(action.tools)
    if isinstance(action, RedactFields):
        if not isinstance(payload, (dict, list)):
            raise ModifyError("RedactFields needs an object or array payload")
        redact_paths(payload, list(action.paths), action.replacement)
        return payload
    if isinstance(action, ReplacePayload):
        if type(action.payload) is not type(payload):
            raise ModifyError("ReplacePayload must keep the payload's JSON type")
        return action.payload
    raise ModifyError(f"unknown modify action {type(action).__name__}")
