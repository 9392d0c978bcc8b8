"""What the library wrapper raises when the gateway refuses or fails a request: one exception per
JSON-RPC error code of the gateway (-32010 hold, -32013 denial, -32011 upstream, -32012 internal).

Each is an `mcp.shared.exceptions.MCPError` as well, so code written against the SDK's
`ClientSession` (which raises `MCPError` for every JSON-RPC error) still catches them; an error
the server itself answered is raised as a plain `MCPError`, exactly as the SDK raises it.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.exceptions import MCPError

from mcpward.protocol import errors


class MCPWardError(MCPError):
    """The gateway refused or failed the request. `code`, `message` and `data` are the JSON-RPC
    error the stdio and HTTP fronts would have answered with; `details` is `data` as a dict."""

    @property
    def details(self) -> dict[str, Any]:
        data = self.data
        return data if isinstance(data, dict) else {}

    def _text(self, key: str) -> str | None:
        value = self.details.get(key)
        return value if isinstance(value, str) else None


class ContractHeld(MCPWardError):
    """-32010 HOLD: the item's contract moved against its pin (or is new or gone and awaits
    review). Nothing was sent to the server. A person reviews with `review` and accepts with
    `accept`; the next call then passes."""

    @property
    def upstream(self) -> str | None:
        return self._text("upstream")

    @property
    def tool(self) -> str | None:
        """The name the call used (a tool or prompt name, or a resource URI)."""
        return self._text("tool")

    @property
    def item_kind(self) -> str | None:
        return self._text("item_kind")

    @property
    def old_hash(self) -> str | None:
        return self._text("old_hash")

    @property
    def new_hash(self) -> str | None:
        return self._text("new_hash")

    @property
    def change_kinds(self) -> list[str]:
        kinds = self.details.get("change_kinds")
        return [k for k in kinds if isinstance(k, str)] if isinstance(kinds, list) else []

    @property
    def posture(self) -> str | None:
        return self._text("posture")

    @property
    def review(self) -> str | None:
        """The command that shows the change (`mcpward pins diff ...`)."""
        return self._text("review")

    @property
    def accept(self) -> str | None:
        """The command that re-pins after review (`mcpward pins accept ...`)."""
        return self._text("accept")

    @property
    def provenance(self) -> dict[str, Any]:
        """Which server, how and when the pin was made, and what a HOLD does not mean."""
        value = self.details.get("provenance")
        return value if isinstance(value, dict) else {}


class CallDenied(MCPWardError):
    """-32013: a guard (`guard`, its `guard_code`) or policy refused the request; the server
    never saw it."""

    @property
    def guard(self) -> str | None:
        return self._text("guard")

    @property
    def guard_code(self) -> str | None:
        return self._text("code")


class UpstreamUnavailable(MCPWardError):
    """-32011: the server could not answer; `reason` is from a closed vocabulary (`crashed`,
    `timeout`, `not_connected`, `shutting_down`, ...)."""

    @property
    def reason(self) -> str | None:
        return self._text("reason")


class GatewayInternalError(MCPWardError):
    """-32012: mcpward failed closed; `incident` names the traceback in its log."""

    @property
    def incident(self) -> str | None:
        return self._text("incident")


_BY_CODE: dict[int, type[MCPWardError]] = {
    errors.HOLD: ContractHeld,
    errors.DENIED: CallDenied,
    errors.UPSTREAM_UNAVAILABLE: UpstreamUnavailable,
    errors.GATEWAY_INTERNAL: GatewayInternalError,
}


def error_from(error: object) -> MCPError:
    """The exception for the JSON-RPC `error` member of an answer from the gateway."""
    if not isinstance(error, dict):
        return GatewayInternalError(errors.GATEWAY_INTERNAL, "malformed error from the gateway")
    code = error.get("code")
    message = error.get("message")
    code = code if isinstance(code, int) and not isinstance(code, bool) else errors.INTERNAL_ERROR
    message = message if isinstance(message, str) else ""
    cls = _BY_CODE.get(code, MCPError)
    return cls(code, message, error.get("data"))
