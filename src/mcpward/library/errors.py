"""What the library wrapper raises when the gateway refuses or fails a request: one exception per
JSON-RPC error code of the gateway (-32010 hold, -32013 denial, -32011 upstream, -32012 internal).
"""

from __future__ import annotations

from typing import Any

from mcpward.protocol import errors


class MCPWardError(Exception):
    """The gateway answered an error; `code`, `message` and `data` are the JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data if isinstance(data, dict) else {}


class ContractHeld(MCPWardError):
    """-32010: the item's contract moved against its pin; `data` says how and how to accept."""


class CallDenied(MCPWardError):
    """-32013: a guard (`data["guard"]`, `data["code"]`) or policy refused the request."""


class UpstreamUnavailable(MCPWardError):
    """-32011: the upstream could not answer (`data["reason"]`)."""


class GatewayInternalError(MCPWardError):
    """-32012: mcpward failed closed; `data["incident"]` is in its log."""


class UpstreamError(MCPWardError):
    """Any other JSON-RPC error: the upstream's own answer, passed through."""


_BY_CODE: dict[int, type[MCPWardError]] = {
    errors.HOLD: ContractHeld,
    errors.DENIED: CallDenied,
    errors.UPSTREAM_UNAVAILABLE: UpstreamUnavailable,
    errors.GATEWAY_INTERNAL: GatewayInternalError,
}


def error_from(error: Any) -> MCPWardError:
    """The exception for a JSON-RPC `error` member."""
    if not isinstance(error, dict):
        return GatewayInternalError(errors.GATEWAY_INTERNAL, "malformed error from the gateway")
    code = error.get("code")
    code = code if isinstance(code, int) else errors.GATEWAY_INTERNAL
    cls = _BY_CODE.get(code, UpstreamError)
    return cls(code, str(error.get("message", "")), error.get("data"))
