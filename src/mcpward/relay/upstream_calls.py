"""Sends one request to one upstream for a session and remembers, while it is in flight, which
client request it belongs to (its route, its progress token, the id the upstream knows it by).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay.links import UpstreamLink

LinkOpener = Callable[[UpstreamLink], Awaitable[None]]


class UpstreamCalls:
    """The only way a session's requests (judged or not) are sent to an upstream."""

    def __init__(self, open_link: LinkOpener) -> None:
        self._open_link = open_link
        self.progress_owner: dict[object, RequestId] = {}
        # (upstream id, str(our request id)) -> the client's request id, while it is in flight:
        # what an upstream says about a request (its HTTP stream, a subscription tag) names
        # our id; the client knows the request by its own.
        self.owners: dict[tuple[str, str], RequestId] = {}
        self.routes: dict[RequestId, str] = {}  # client request id -> upstream it went to

    async def request(
        self,
        link: UpstreamLink,
        method: str,
        params: dict[str, Any] | None,
        client_rid: RequestId,
        timeout: float | None = None,
    ) -> Message:
        """Open the link if needed (start, era), send, and wait for the upstream's answer."""
        await self._open_link(link)
        token = None
        meta = params.get("_meta") if params else None
        if isinstance(meta, dict) and _is_token(meta.get("progressToken")):
            token = meta["progressToken"]  # only a valid token is remembered (and hashable)
            self.progress_owner[token] = client_rid
        self.routes[client_rid] = link.id
        key = (link.id, str(link.new_request_id()))
        self.owners[key] = client_rid
        try:
            return await link.request_raw(method, params, timeout, int(key[1]))
        finally:
            self.routes.pop(client_rid, None)
            self.owners.pop(key, None)
            if token is not None:
                self.progress_owner.pop(token, None)

    def owner(self, link: UpstreamLink, ours: Any) -> RequestId | None:
        """The client request behind our request id `ours` to this link, while in flight."""
        return self.owners.get((link.id, str(ours)))

    def related_for(self, link: UpstreamLink, carried_by: Any) -> RequestId | None:
        """The client request a server-initiated message belongs to: the one whose stream
        carried it, else the only request in flight to that upstream, else none."""
        if carried_by is not None:
            owner = self.owner(link, carried_by)
            if owner is not None:
                return owner
        candidates = [rid for rid, up in self.routes.items() if up == link.id]
        return candidates[0] if len(candidates) == 1 else None


def _is_token(value: object) -> bool:
    """MCP's progress token: a string or an integer."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)
