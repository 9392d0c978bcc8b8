"""The interface every upstream connector implements: a message pipe to one MCP server.

The relay owns lifecycle policy (restart with backoff, deadlines); connectors own the wire.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from mcpward.protocol.errors import UpstreamFailure


class UpstreamUnavailable(Exception):
    """The upstream cannot take or give messages; `reason` is from the closed vocabulary."""

    def __init__(self, reason: UpstreamFailure, detail: str = "") -> None:
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason
        self.detail = detail


class CommandMissing(UpstreamUnavailable):
    """A stdio upstream's command cannot be started; `problem` names it and the OS error (our
    own words, from the config: safe to show the client)."""

    def __init__(self, problem: str) -> None:
        super().__init__(UpstreamFailure.NOT_CONNECTED, problem)
        self.problem = problem


class UpstreamConnection(ABC):
    """One live connection. `start` again after a failure makes a fresh one (restart)."""

    def __init__(self, upstream_id: str) -> None:
        self.upstream_id = upstream_id

    @property
    @abstractmethod
    def identity_digest(self) -> str:
        """A stable digest of what this upstream is (command + args, or URL origin)."""

    @abstractmethod
    async def start(self) -> None:
        """Spawn or connect. Raises UpstreamUnavailable on failure."""

    @abstractmethod
    async def send(self, message: dict[str, Any]) -> None:
        """Send one JSON-RPC message. Raises UpstreamUnavailable if the upstream is gone."""

    async def send_encoded(self, message: dict[str, Any], data: bytes) -> None:
        """Send `message`, already serialised as `data` (the relay measures what it queues);
        connectors that write bytes override this to skip serialising twice."""
        await self.send(message)

    @abstractmethod
    async def receive(self) -> dict[str, Any]:
        """The next message from the upstream. Raises UpstreamUnavailable when it is gone.

        A frame that is over the size cap or unparseable raises UpstreamUnavailable with
        FRAME_TOO_LARGE/UNPARSEABLE only if the connection cannot continue; otherwise the
        connector skips it and logs (the relay answers the affected request by deadline).
        """

    async def receive_related(self) -> tuple[dict[str, Any], Any]:
        """The next message, with the id of our request whose stream carried it (Streamable
        HTTP knows this), or None where the transport cannot tell (stdio)."""
        return await self.receive(), None

    @abstractmethod
    async def close(self) -> None:
        """Stop and release everything (kill the process group; close HTTP sessions)."""
