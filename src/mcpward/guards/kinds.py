"""The built-in guard kinds by config name, listed explicitly (as mitmproxy's default_addons()
lists its addons): nothing registers itself by being imported.
"""

from __future__ import annotations

from mcpward.guards.access import AccessGuard
from mcpward.guards.http_hook import HttpHookGuard
from mcpward.guards.response_injection import ResponseInjectionGuard
from mcpward.guards.rug_pull import RugPullGuard
from mcpward.guards.secrets import SecretsGuard
from mcpward.guards.server_allowlist import ServerAllowlistGuard
from mcpward.guards.tool_filter import ToolFilterGuard
from mcpward.guards.tool_poisoning import ToolPoisoningGuard
from mcpward.guards.tool_shadowing import ToolShadowingGuard
from mcpward.guards.wasm.guard import WasmGuard
from mcpward.pipeline.guard import Guard

BUILTIN_GUARDS: tuple[type[Guard], ...] = (
    AccessGuard,
    RugPullGuard,
    ToolPoisoningGuard,
    ToolShadowingGuard,
    ServerAllowlistGuard,
    ToolFilterGuard,
    SecretsGuard,
    ResponseInjectionGuard,
    HttpHookGuard,
    WasmGuard,
)


def guard_kinds() -> dict[str, type[Guard]]:
    """Config name -> guard class, for every built-in kind."""
    kinds: dict[str, type[Guard]] = {}
    for cls in BUILTIN_GUARDS:
        if not cls.kind or cls.kind in kinds:
            raise TypeError(f"{cls.__name__}: guard kind {cls.kind!r} is empty or listed twice")
        kinds[cls.kind] = cls
    return kinds


def resolve_guard_kind(kind: str) -> type[Guard]:
    """The class for a kind, or KeyError listing the known kinds."""
    kinds = guard_kinds()
    try:
        return kinds[kind]
    except KeyError:
        known = ", ".join(sorted(kinds))
        raise KeyError(f"unknown guard kind {kind!r}; known kinds: {known}") from None
