"""mcpward: a security gateway for the Model Context Protocol.

Pins tool contracts, runs a guard pipeline on every message, and records a tamper-evident receipt.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # typed for checkers; imported on first use at run time (below)
    from mcpward.library import (
        CallDenied,
        ContractHeld,
        GatewayInternalError,
        GuardedSession,
        MCPWardError,
        UpstreamUnavailable,
        guarded,
        wrap,
    )

__all__ = [
    "CallDenied",
    "ContractHeld",
    "GatewayInternalError",
    "GuardedSession",
    "MCPWardError",
    "UpstreamUnavailable",
    "__version__",
    "guarded",
    "wrap",
]


def __getattr__(name: str) -> object:
    """`from mcpward import guarded` (and the library's exceptions), imported on first use so
    `import mcpward` stays light for the CLI."""
    import importlib

    library = importlib.import_module("mcpward.library")
    if name in library.__all__:
        return getattr(library, name)
    raise AttributeError(f"module 'mcpward' has no attribute {name!r}")
