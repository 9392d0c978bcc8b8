"""One session's protocol state: who the client is, which era it speaks, its upstream links;
guard contexts and the params of the gateway's own upstream requests follow from it.
"""

from __future__ import annotations

from typing import Any

from mcpward.pipeline.context import GuardContext, Identity
from mcpward.pipeline.services import LiveContracts
from mcpward.protocol import jsonrpc
from mcpward.protocol.eras import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    Era,
    complete_result,
    message_era,
)
from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay.links import UpstreamLink
from mcpward.relay.shared import SessionServices
from mcpward.relay.unrelayed import without_tasks


class SessionState:
    """Mutable per-session facts every part of a session reads; `links` is filled by Session."""

    def __init__(
        self, services: SessionServices, identity: Identity | None, session_id: str | None
    ) -> None:
        self.services = services
        self.ns = services.namespace
        self.pipeline = services.pipeline
        self.identity = identity
        self.session_id = session_id
        self.era: Era | None = None
        self.client_caps: dict[str, Any] = {}
        self.modern_version: str | None = None
        self.links: dict[str, UpstreamLink] = {}

    def note_era(self, params: dict[str, Any]) -> Era:
        """The era of one client message; a 2026-07-28 message also sets the session's."""
        era = message_era(params)
        if era is Era.MODERN:
            self.era = Era.MODERN
            meta = params.get("_meta") or {}
            self.modern_version = meta.get(META_PROTOCOL_VERSION)
            caps = meta.get(META_CLIENT_CAPABILITIES)
            if isinstance(caps, dict):
                self.client_caps = caps
        return era

    def own_params(self, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Params for the gateway's own upstream requests (its full read of a connection's lists),
        with era-correct _meta. A 2026-07-28 request declares the client's capabilities (without
        tasks), as a handshake did for the connection: a server may list items only to clients
        that declare one (`roots`), and the read is what this session's client is served."""
        if self.era is not Era.MODERN:
            return params
        out = dict(params or {})
        caps = without_tasks(self.client_caps)
        out["_meta"] = {META_PROTOCOL_VERSION: self.modern_version, META_CLIENT_CAPABILITIES: caps}
        return out

    def ctx(
        self, upstream: str, method: str, era: Era, contracts: LiveContracts | None = None
    ) -> GuardContext:
        return GuardContext(
            server_name=upstream,
            method=method,
            era=era,
            identity=self.identity,
            session_id=self.session_id,
            catalog=self.services.catalog.tools_view,
            upstream_order=self.services.upstream_ids,
            contracts=contracts,
        )

    @staticmethod
    def offers(link: UpstreamLink, capability: str) -> bool:
        """Does the upstream offer this capability (unknown before it is opened: yes)?"""
        if link.init_result is None:
            return True
        caps = link.init_result.get("capabilities")
        return not isinstance(caps, dict) or capability in caps

    @staticmethod
    def finish(request_id: RequestId, result: dict[str, Any], era: Era) -> Message:
        return jsonrpc.result(
            request_id, complete_result(result, era) if era is Era.MODERN else result
        )
