"""Opening upstreams in the client's era: initialize (handshake era), server/discover
(2026-07-28), and bridging a handshake-only upstream for a 2026-07-28 client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import (
    LATEST_HANDSHAKE,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    Era,
)
from mcpward.protocol.errors import UpstreamFailure
from mcpward.protocol.jsonrpc import Message
from mcpward.relay import replies
from mcpward.relay.links import UpstreamError, UpstreamLink
from mcpward.relay.merge import GATEWAY_INFO, merge_discover, merge_initialize
from mcpward.relay.state import SessionState
from mcpward.relay.unrelayed import with_tasks_removed, without_tasks

log = logging.getLogger("mcpward.relay")


class EraOpener:
    """Answers initialize, server/discover and ping, and opens a link before its first request."""

    def __init__(self, state: SessionState, on_opened: Callable[[], None]) -> None:
        self.state = state
        self._on_opened = on_opened  # the session re-reads every upstream's lists

    async def open(self, link: UpstreamLink) -> None:
        """Started, and for a 2026-07-28 session discovered (or bridged): ready for a request."""
        await link.ensure_started()
        if self.state.era is Era.MODERN and link.init_result is None:
            await self._prepare_modern(link)

    def _openable(self) -> list[UpstreamLink]:
        """The links to open: all but those refused before start (one upstream: that one, whose
        refusal then answers the client)."""
        links = list(self.state.links.values())
        refused = self.state.services.refused
        return [link for link in links if link.id not in refused] or links[:1]

    # ---- handshake era -----------------------------------------------------------------------

    async def initialize(self, message: Message) -> Message:
        state = self.state
        request_id = message["id"]
        params = message.get("params") or {}
        state.era = Era.HANDSHAKE
        caps = params.get("capabilities")
        state.client_caps = caps if isinstance(caps, dict) else {}
        links = self._openable()
        outcomes = await asyncio.gather(
            *(self._init_link(link, params) for link in links), return_exceptions=True
        )
        pairs = list(zip(links, outcomes, strict=True))
        if not state.ns.enabled:
            _, outcome = pairs[0]
            if isinstance(outcome, UpstreamError):
                return replies.upstream_unavailable(request_id, outcome)
            if isinstance(outcome, BaseException):
                raise outcome
            return {**outcome, "id": request_id}
        good = []
        for link, outcome in pairs:
            if isinstance(outcome, dict) and "result" in outcome:
                good.append((link.id, outcome["result"]))
            else:
                log.warning("upstream %s did not initialize: %s", link.id, describe(outcome))
        if not good:
            first = next(o for _, o in pairs)
            if isinstance(first, UpstreamError):
                return replies.upstream_unavailable(request_id, first)
            return jsonrpc.error(
                request_id,
                errors.UPSTREAM_UNAVAILABLE,
                "no upstream could be initialized",
                {"reason": "not_connected"},
            )
        return jsonrpc.result(request_id, merge_initialize(params.get("protocolVersion"), good))

    async def _init_link(self, link: UpstreamLink, params: dict[str, Any]) -> Message:
        if link.modern_committed:
            await link.reconnect()
        await link.ensure_started()
        caps = params.get("capabilities")
        if without_tasks(caps) is not caps:  # the upstream must not hand the client tasks either
            params = {**params, "capabilities": without_tasks(caps)}
        reply = await link.request_raw(
            methods.INITIALIZE, params, self.state.services.connect_timeout_s
        )
        if isinstance(reply.get("result"), dict):
            reply = {**reply, "result": with_tasks_removed(reply["result"])}
            link.init_params = params
            link.init_result = reply["result"]
        return reply

    # ---- 2026-07-28 --------------------------------------------------------------------------

    async def discover(self, message: Message) -> Message:
        state = self.state
        request_id = message["id"]
        params = message.get("params") or {}
        era = state.note_era(params)
        links = list(state.links.values())
        if not state.ns.enabled:
            # One upstream: transparent. A handshake-only server's error reaches the client, which
            # then falls back to initialize (and keeps sampling, elicitation and roots).
            try:
                outcome = await self._discover_link(links[0], params)
            except UpstreamError as exc:
                return replies.upstream_unavailable(request_id, exc)
            if "result" in outcome:
                self._on_opened()
            return {**outcome, "id": request_id}
        links = self._openable()
        outcomes = await asyncio.gather(
            *(self._discover_or_bridge(link, params) for link in links), return_exceptions=True
        )
        good = []
        for link, answer in zip(links, outcomes, strict=True):
            if isinstance(answer, dict):
                good.append((link.id, answer))
            else:
                log.warning(
                    "upstream %s did not answer server/discover: %s", link.id, describe(answer)
                )
        if not good:
            return jsonrpc.error(
                request_id,
                errors.UPSTREAM_UNAVAILABLE,
                "no upstream answered server/discover",
                {"reason": "not_connected"},
            )
        if era is Era.MODERN:
            self._on_opened()
        return jsonrpc.result(request_id, merge_discover(good))

    async def _discover_link(self, link: UpstreamLink, params: dict[str, Any]) -> Message:
        await link.ensure_started()
        # Set before sending: a dual-era server commits on receipt, even if we never see the answer.
        link.modern_committed = True
        reply = await link.request_raw(
            methods.DISCOVER, params, self.state.services.connect_timeout_s
        )
        if isinstance(reply.get("result"), dict):
            reply = {**reply, "result": with_tasks_removed(reply["result"])}
            link.init_result = reply["result"]
        return reply

    async def _discover_or_bridge(
        self, link: UpstreamLink, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A DiscoverResult for this upstream: its own, or one bridged from a handshake."""
        reply = await self._discover_link(link, params)
        if isinstance(reply.get("result"), dict):
            return reply["result"]
        return await self._bridge(link)

    async def _bridge(self, link: UpstreamLink) -> dict[str, Any]:
        """Open a handshake-only upstream for a 2026-07-28 client: the gateway does the handshake.

        The upstream is told of no client capabilities, so it sends no server->client requests
        (they have no 2026-07-28 form to translate into). Results get `resultType` on the way out.
        """
        if link.modern_committed and link.init_result is not None:
            await link.reconnect()
        init = {
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": {},
            "clientInfo": dict(GATEWAY_INFO),
        }
        reply = await link.request_raw(
            methods.INITIALIZE, init, self.state.services.connect_timeout_s
        )
        result = reply.get("result")
        if not isinstance(result, dict):
            raise UpstreamError(link.id, UpstreamFailure.NOT_CONNECTED, "initialize refused")
        link.init_params, link.init_result = init, result
        link.modern_committed = False
        link.initialized_sent = True
        await link.notify(methods.INITIALIZED, None)
        bridged: dict[str, Any] = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": without_tasks(result.get("capabilities") or {}),
        }
        if isinstance(result.get("instructions"), str):
            bridged["instructions"] = result["instructions"]
        return bridged

    async def _prepare_modern(self, link: UpstreamLink) -> None:
        """Before a 2026-07-28 request reaches an upstream nobody has opened yet (no discover)."""
        async with link.prepare_lock:
            if link.init_result is not None:
                return
            meta: dict[str, Any] = {
                META_PROTOCOL_VERSION: self.state.modern_version,
                META_CLIENT_CAPABILITIES: {},
            }
            await self._discover_or_bridge(link, {"_meta": meta})

    async def ping(self, message: Message) -> Message:
        """The gateway is the client's peer: in the handshake era it answers a ping for itself
        (MCP lets either side ping its peer; an upstream's health shows on the calls it fails).
        2026-07-28 removed ping: -32601, as a server of that era answers (docs/conformance.md)."""
        era = self.state.note_era(message.get("params") or {})
        if era is Era.MODERN:
            return jsonrpc.error(
                message["id"],
                errors.METHOD_NOT_FOUND,
                "Method not found: ping (removed in 2026-07-28)",
            )
        return self.state.finish(message["id"], {}, era)


def describe(outcome: object) -> str:
    """One upstream's failed answer, for a log line (never its body)."""
    if isinstance(outcome, dict) and isinstance(outcome.get("error"), dict):
        return f"error {outcome['error'].get('code')}"
    return str(outcome)
