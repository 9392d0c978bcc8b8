"""Built-in guard kinds, one module each. Importing this package registers them all."""

from mcpward.guards import (
    access,
    http_hook,
    response_injection,
    rug_pull,
    secrets,
    server_allowlist,
    tool_filter,
    tool_poisoning,
    tool_shadowing,
    wasm,
)

__all__ = [
    "access",
    "http_hook",
    "response_injection",
    "rug_pull",
    "secrets",
    "server_allowlist",
    "tool_filter",
    "tool_poisoning",
    "tool_shadowing",
    "wasm",
]
