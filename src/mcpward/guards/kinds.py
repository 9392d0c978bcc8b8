"""The built-in guard kinds by config name, listed explicitly (as mitmproxy's default_addons()
lists its addons): nothing registers itself by being imported.

Each kind's module is imported when a configuration uses it: a gateway with the default guards
never loads the WebAssembly engine (`wasm`) or the HTTP client (`http_hook`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpward.pipeline.guard import Guard

# config name -> "module:Class"
BUILTIN_GUARDS: dict[str, str] = {
    "access": "mcpward.guards.access:AccessGuard",
    "rug_pull": "mcpward.guards.rug_pull:RugPullGuard",
    "tool_poisoning": "mcpward.guards.tool_poisoning:ToolPoisoningGuard",
    "tool_shadowing": "mcpward.guards.tool_shadowing:ToolShadowingGuard",
    "server_allowlist": "mcpward.guards.server_allowlist:ServerAllowlistGuard",
    "tool_filter": "mcpward.guards.tool_filter:ToolFilterGuard",
    "secrets": "mcpward.guards.secrets:SecretsGuard",
    "response_injection": "mcpward.guards.response_injection:ResponseInjectionGuard",
    "http_hook": "mcpward.guards.http_hook:HttpHookGuard",
    "wasm": "mcpward.guards.wasm.guard:WasmGuard",
}


def guard_kinds() -> dict[str, type[Guard]]:
    """Config name -> guard class, for every built-in kind (imports them all)."""
    return {kind: resolve_guard_kind(kind) for kind in BUILTIN_GUARDS}


def resolve_guard_kind(kind: str) -> type[Guard]:
    """The class for a kind (its module imported now), or KeyError listing the known kinds."""
    target = BUILTIN_GUARDS.get(kind)
    if target is None:
        known = ", ".join(sorted(BUILTIN_GUARDS))
        raise KeyError(f"unknown guard kind {kind!r}; known kinds: {known}")
    module, _, name = target.partition(":")
    cls: type[Guard] = getattr(importlib.import_module(module), name)
    if cls.kind != kind:
        raise TypeError(f"{target}: declares guard kind {cls.kind!r}, listed as {kind!r}")
    return cls
