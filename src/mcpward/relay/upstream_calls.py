"""Sends one request to one upstream for a session and remembers, while it is in flight, which
client request it belongs to (its route, its progress token, the id the upstream knows it by).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay.links import UpstreamLink
from mcpward.relay.server_requests import rememberable

LinkOpener = Callable[[UpstreamLink], Awaitable[None]]


class ProgressOwners:
    """The client's progress token of each request in flight -> that request's id. Only short
    string or integer tokens are kept (a long or odd one is the client's to lose: its progress
    notifications then follow the stream that carried them, or none)."""

    def __init__(self) -> None:
        self._owners: dict[Any, RequestId] = {}

    def __len__(self) -> int:
        return len(self._owners)

    def claim(self, token: object, client_rid: RequestId) -> bool:
        """Remember `token` for `client_rid`; False if it is not kept (odd, or in use)."""
        if not rememberable(token) or token in self._owners:
            return False
        self._owners[token] = client_rid
        return True

    def release(self, token: object, client_rid: RequestId) -> None:
        if rememberable(token) and self._owners.get(token) == client_rid:
            del self._owners[token]

    def get(self, token: object, default: RequestId | None = None) -> RequestId | None:
        return self._owners.get(token, default) if rememberable(token) else default


class UpstreamCalls:
    """The only way a session's requests (judged or not) are sent to an upstream."""

    def __init__(self, open_link: LinkOpener) -> None:
        self._open_link = open_link
        self.progress_owner = ProgressOwners()
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
        if isinstance(meta, dict) and self.progress_owner.claim(
            meta.get("progressToken"), client_rid
        ):
            token = meta["progressToken"]
        self.routes[client_rid] = link.id
        key = (link.id, str(link.new_request_id()))
        self.owners[key] = client_rid
        try:
            return await link.request_raw(method, params, timeout, int(key[1]))
        finally:
            self.routes.pop(client_rid, None)
            self.owners.pop(key, None)
            if token is not None:
                self.progress_owner.release(token, client_rid)

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
