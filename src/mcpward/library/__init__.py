"""The in-process surface: the gateway in front of an `mcp` SDK client session (docs/library.md)."""

from mcpward.library.errors import (
    CallDenied,
    ContractHeld,
    GatewayInternalError,
    MCPWardError,
    UpstreamUnavailable,
)
from mcpward.library.wrapper import GuardedSession, guarded, wrap

__all__ = [
    "CallDenied",
    "ContractHeld",
    "GatewayInternalError",
    "GuardedSession",
    "MCPWardError",
    "UpstreamUnavailable",
    "guarded",
    "wrap",
]
