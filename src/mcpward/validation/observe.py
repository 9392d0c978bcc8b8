"""What is observed around each call: the sandbox's writable area, the processes left in it,
and whether a result keeps its declared output schema. Never records values, only where.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcpward.upstreams.lifeline import process_table

MAX_ENTRIES = 10_000
FileState = dict[str, tuple[int, int, int]]


def workdir_state(root: Path) -> FileState:
    """Every entry under the writable area: relative path -> (mode, size, mtime ns)."""
    state: FileState = {}
    for current, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(current) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            state[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns)
            if len(state) >= MAX_ENTRIES:
                return state
    return state


def workdir_changes(before: FileState, after: FileState) -> list[str]:
    """Created, changed and removed paths between two states (sorted, for the report)."""
    changes = [f"created {p}" for p in after if p not in before]
    changes += [f"changed {p}" for p in after if p in before and after[p] != before[p]]
    changes += [f"removed {p}" for p in before if p not in after]
    return sorted(changes)


def descendants(root_pid: int) -> set[int]:
    """Every live process below `root_pid` (read from /proc; the sandbox's PID namespace is
    below it, so a process that detached with setsid is still found)."""
    parents: dict[int, list[int]] = {}
    for pid, (parent, state) in process_table().items():
        if state != b"Z":
            parents.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root_pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def output_problems(result: dict[str, Any], output_schema: Any) -> list[str]:
    """How a successful result contradicts the declared `outputSchema` (paths and keywords
    only, never the values)."""
    if not isinstance(output_schema, dict):
        return []
    structured = result.get("structuredContent")
    if structured is None:
        return ["no structuredContent although the tool declares an outputSchema"]
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    try:
        cls = validators.validator_for(output_schema)
        cls.check_schema(output_schema)
    except SchemaError:
        return ["the declared outputSchema is not a valid JSON Schema"]
    problems = []
    for error in cls(output_schema).iter_errors(structured):
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        problems.append(
            f"structuredContent{where if where != '/' else ''}: fails {error.validator}"
        )
    return sorted(problems)[:10]
