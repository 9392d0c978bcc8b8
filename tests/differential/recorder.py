"""What an SDK client sees, step by step, as plain JSON: each step's result or error.

A recording is a list of `[step, outcome]` pairs; an outcome is `{"result": ...}` (the SDK's
model dumped by alias, `None` fields left out) or `{"error": {"code", "message", "data"}}`.
Requests the server sends the client (sampling, elicitation, roots) and progress notifications
are recorded inside the step that caused them.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

Recording = list[list[Any]]


def dump(value: Any) -> Any:
    """A result as the JSON the client holds (models by alias, unset optional fields left out)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


class Recorder:
    """Collects the outcome of each step and whatever the server sent the client meanwhile."""

    def __init__(self) -> None:
        self.steps: Recording = []
        self._side: list[Any] = []

    def saw(self, kind: str, payload: Any) -> None:
        """A server-to-client request or notification, attached to the running step."""
        self._side.append([kind, dump(payload)])

    def note(self, step: str, value: Any) -> None:
        self.steps.append([step, {"result": dump(value)}])

    async def step(self, step: str, call: Awaitable[Any]) -> Any:
        self._side = []
        outcome: dict[str, Any]
        value: Any = None
        try:
            value = await call
            outcome = {"result": dump(value)}
        except MCPError as error:
            outcome = {"error": {"code": error.code, "message": error.message}}
            if error.error.data is not None:
                outcome["error"]["data"] = error.error.data
        if self._side:
            outcome["server_sent"] = self._side
        self.steps.append([step, outcome])
        return value
