"""One client session: dispatches each client message to the part that answers it, relays what
upstreams send back, and owns the session's lifecycle (links, in-flight requests, shutdown).

Judged calls go through `relay.judged` only; lists through `relay.lists`; era handshakes through
`relay.eras`; everything else through `relay.passthrough`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from mcpward.evidence.record import DecisionRecord
from mcpward.pipeline.context import Identity
from mcpward.pipeline.services import UpstreamSnapshot
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import META_SUBSCRIPTION_ID, Era, message_era, modern_fields
from mcpward.protocol.jsonrpc import Frame, FrameKind, Message, RequestId
from mcpward.relay import replies
from mcpward.relay.eras import EraOpener
from mcpward.relay.judged import JudgedCalls
from mcpward.relay.links import CancelReason, UpstreamLink
from mcpward.relay.lists import LIST_KINDS, ListRelay
from mcpward.relay.live_contracts import ConnectionContracts
from mcpward.relay.outbound import judge_error, judge_message
from mcpward.relay.passthrough import Passthrough
from mcpward.relay.process_pool import LOCAL, Tenant
from mcpward.relay.routing import Routes
from mcpward.relay.server_requests import ServerRequests
from mcpward.relay.shared import SessionServices
from mcpward.relay.state import SessionState
from mcpward.relay.upstream_calls import UpstreamCalls

log = logging.getLogger("mcpward.relay")
MAX_NOTICES = 256  # distinct notices remembered per session (a repeat after that is sent)

# Requests of one client in flight at once; past it a request is refused at once (each holds a
# task and its id, and a client chooses how many it sends).
MAX_INFLIGHT_REQUESTS = 1024


class Downstream(Protocol):
    """Where the session's messages to the client go (a stdio pipe, an HTTP stream, ...)."""

    async def send(self, message: Message, related_request_id: RequestId | None) -> None: ...


class Session:
    """The state of one client: its era, its upstream links, and its in-flight requests."""

    def __init__(
        self,
        services: SessionServices,
        downstream: Downstream,
        identity: Identity | None,
        session_id: str | None,
        tenant: Tenant = LOCAL,
    ) -> None:
        self.services = services
        self.downstream = downstream
        self.identity = identity
        self.session_id = session_id
        self.state = state = SessionState(services, identity, session_id)
        self.eras = EraOpener(state, lambda: self._spawn(self._refresh_all()))
        self.calls = UpstreamCalls(self.eras.open)
        self.routes = Routes(state)
        self.lists = ListRelay(
            state, self.calls, self.routes, self.contracts_of, self._record, self._notice
        )
        self.judged = JudgedCalls(
            state,
            self.calls,
            self.routes,
            self.eras.open,
            self.contracts_of,
            self._refresh_all,
            self._record,
            services.tracer,
        )
        self.passthrough = Passthrough(state, self.calls, self.routes)
        self._contracts: dict[str, ConnectionContracts] = {}
        self._fetchers: dict[str, Callable[[], Awaitable[Any]]] = {}
        for upstream_id in services.upstream_ids:
            link = services.make_link(
                upstream_id, self._on_upstream_message, self._on_link_state, tenant
            )
            state.links[upstream_id] = link
            contracts = ConnectionContracts(link, self.lists.read_snapshot, self._publish)
            self._contracts[upstream_id] = contracts
            fetcher = contracts.reread  # one bound method: clear_fetcher compares identity
            self._fetchers[upstream_id] = fetcher
            services.catalog.set_fetcher(upstream_id, fetcher)
        self._inflight: dict[RequestId, asyncio.Task[None]] = {}
        # What upstreams asked the client and wait for (capped; forgotten on answer/cancel).
        self.server_requests = ServerRequests()
        self._background: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._told_failed: set[str] = set()  # upstreams the client was told failed at start
        self._told_notices: set[str] = set()  # guards' notices already sent (bounded)
        self._opening: asyncio.Task[None] | None = None  # the client's initialize, while running
        self._handlers: dict[str, Callable[[Message], Awaitable[Message | None]]] = {
            methods.INITIALIZE: functools.partial(self._open, self.eras.initialize),
            methods.DISCOVER: functools.partial(self._open, self.eras.discover),
            methods.PING: self.eras.ping,
            methods.TOOLS_CALL: self.judged.handle,
            methods.PROMPTS_GET: self.judged.handle,
            methods.RESOURCES_READ: self.judged.handle,
            methods.RESOURCES_SUBSCRIBE: self.passthrough.resource_op,
            methods.RESOURCES_UNSUBSCRIBE: self.passthrough.resource_op,
            methods.COMPLETION_COMPLETE: self.passthrough.complete,
            methods.LOGGING_SET_LEVEL: self.passthrough.fan_out,
            methods.SUBSCRIPTIONS_LISTEN: self.passthrough.listen,
        }
        for method in LIST_KINDS:
            self._handlers[method] = self.lists.handle

    async def _open(
        self, answer: Callable[[Message], Awaitable[Message]], message: Message
    ) -> Message:
        reply = await answer(message)
        self.services.opened()
        return reply

    @property
    def links(self) -> dict[str, UpstreamLink]:
        return self.state.links

    def contracts_of(self, link: UpstreamLink) -> ConnectionContracts:
        """What this session's connection to that upstream serves (see relay.live_contracts)."""
        return self._contracts[link.id]

    # ---- client -> gateway -------------------------------------------------------------

    async def handle(self, frame: Frame) -> None:
        """Take one parsed client message. Requests run concurrently; the rest in order.

        A client that sends on before the answer to its `initialize` (a pipelined or file-fed
        client) waits here for the handshake to finish, so its `initialized` reaches the
        upstreams and its requests meet opened connections."""
        kind = frame.kind
        opening = self._opening
        if (
            opening is not None
            and not opening.done()
            and frame.message.get("method")
            not in (
                methods.PING,
                methods.CANCELLED,
            )
        ):
            await asyncio.wait({opening}, timeout=self.services.connect_timeout_s)
        if kind is FrameKind.REQUEST:
            request_id = frame.message["id"]
            if request_id in self._inflight:
                await self._send(
                    jsonrpc.error(
                        request_id, errors.INVALID_REQUEST, "request id is already in use"
                    ),
                    None,
                )
                return
            if len(self._inflight) >= MAX_INFLIGHT_REQUESTS:
                await self._send(
                    jsonrpc.error(
                        request_id,
                        errors.INVALID_REQUEST,
                        f"too many requests in flight (at most {MAX_INFLIGHT_REQUESTS}); "
                        "send it again once some are answered",
                    ),
                    None,
                )
                return
            task = asyncio.create_task(self._serve(frame.message))
            self._inflight[request_id] = task
            # A request cancelled before its task ran never reaches `_serve`'s cleanup.
            task.add_done_callback(partial(self._request_done, request_id))
            if frame.message["method"] == methods.INITIALIZE:
                self._opening = task
        elif kind is FrameKind.NOTIFICATION:
            await self._client_notification(frame.message)
        else:
            await self._client_response(frame.message)

    async def _serve(self, message: Message) -> None:
        request_id = message["id"]
        method = message["method"]
        try:
            handler = self._handlers.get(method, self.passthrough.other)
            try:
                reply = await handler(message)
                if reply is not None and "error" in reply and handler is not self.judged.handle:
                    # (a judged call's error is judged there, with its receipt)
                    reply = await self._judged_error(reply, request_id, method)
            except asyncio.CancelledError:
                raise
            except Exception:
                reply = replies.internal(request_id, method)
            if reply is not None:
                result = reply.get("result")
                if isinstance(result, dict) and _is_modern(message):
                    modern_fields(method, result)  # e.g. from a bridged handshake-only upstream
                await self._send(reply, request_id)
        except asyncio.CancelledError:
            pass  # the client cancelled: no answer is sent (the upstream was told)
        finally:
            self._inflight.pop(request_id, None)

    async def _client_notification(self, message: Message) -> None:
        method = message["method"]
        params = message.get("params") or {}
        if method == methods.INITIALIZED:
            for link in self.links.values():
                if link.up and link.init_result is not None:
                    link.initialized_sent = True
                    await link.send_raw(message)
            self._spawn(self._refresh_all())
        elif method == methods.CANCELLED:
            task = self._inflight.get(params.get("requestId"))  # type: ignore[arg-type]
            if task is not None:
                reason = params.get("reason")
                task.cancel(CancelReason(reason) if isinstance(reason, str) else None)
        elif method == methods.PROGRESS:
            owner = self.server_requests.progress_link(params.get("progressToken"))
            if owner is not None:
                await owner.send_raw(message)
        else:
            for link in self.links.values():
                await link.send_raw(message)

    async def _client_response(self, message: Message) -> None:
        waiting = self.server_requests.answered(message.get("id"))
        if waiting is None:
            log.debug("client answered an unknown server request id; dropped")
            return
        await waiting.link.send_raw({**message, "id": waiting.upstream_id})

    # ---- upstream -> gateway -----------------------------------------------------------

    async def _on_upstream_message(
        self, link: UpstreamLink, message: Message, carried_by: Any = None
    ) -> None:
        """A message from an upstream; `carried_by` is our request whose stream carried it."""
        method = message.get("method")
        if method is None:
            return  # an answer to nothing we asked: dropped
        if "id" in message:
            await self._upstream_request(link, message, self.calls.related_for(link, carried_by))
            return
        # A notification belongs to a request only if that request's stream carried it.
        related = self.calls.owner(link, carried_by) if carried_by is not None else None
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and META_SUBSCRIPTION_ID in meta:
            related = self.calls.owner(link, meta[META_SUBSCRIPTION_ID])
            if related is None:
                log.debug("upstream %s: notification for a subscription not open; dropped", link.id)
                return
            meta = {**meta, META_SUBSCRIPTION_ID: related}
            message = {**message, "params": {**params, "_meta": meta}}
        if method == methods.PROGRESS:
            related = self.calls.progress_owner.get(params.get("progressToken"), related)
        elif method == methods.CANCELLED:
            gw_id = self.server_requests.cancelled(link, params.get("requestId"))
            if gw_id is None:
                return
            message = {**message, "params": {**params, "requestId": gw_id}}
        elif method in methods.LIST_CHANGED:
            # From now on nothing read before describes this connection: the next judged
            # request on it waits for a fresh read (started here, shared).
            contracts = self.contracts_of(link)
            contracts.invalidate()
            self._spawn(contracts.current())
        judged = await self._judged_message(link, message)
        if judged is not None:
            await self._send(judged, related)

    async def _upstream_request(
        self, link: UpstreamLink, message: Message, related: RequestId | None
    ) -> None:
        method = message["method"]
        upstream_rid = message["id"]
        if method == methods.PING:
            await link.send_raw(jsonrpc.result(upstream_rid, {}))
            return
        capability = methods.SERVER_REQUEST_CAPABILITY.get(method)
        if capability is not None and capability not in self.state.client_caps:
            await link.send_raw(
                jsonrpc.error(
                    upstream_rid,
                    errors.METHOD_NOT_FOUND,
                    f"the client did not declare the {capability!r} capability",
                )
            )
            return
        judged = await self._judged_message(link, message)
        if judged is None:
            await link.send_raw(
                jsonrpc.error(upstream_rid, errors.DENIED, "refused by the gateway's guards")
            )
            return
        params = message.get("params")
        gw_id = self.server_requests.add(
            link, upstream_rid, params.get("_meta") if isinstance(params, dict) else None
        )
        if gw_id is None:
            await link.send_raw(
                jsonrpc.error(
                    upstream_rid if isinstance(upstream_rid, (str, int)) else None,
                    errors.INVALID_REQUEST,
                    "mcpward: too many requests wait for the client (or the id is too long)",
                )
            )
            return
        await self._send({**judged, "id": gw_id}, related)

    async def _judged_message(self, link: UpstreamLink, message: Message) -> Message | None:
        """An upstream's notification or request after the guards (None: drop it)."""
        state = self.state
        ctx = state.ctx(link.id, message["method"], state.era or Era.HANDSHAKE)
        return await judge_message(state.pipeline, message, ctx)

    async def _judged_error(self, reply: Message, request_id: RequestId, method: str) -> Message:
        """An error answering a request that is not a judged call, after the guards."""
        state = self.state
        links = state.links
        upstream = next(iter(links)) if len(links) == 1 else "*"  # "*": one of several
        ctx = state.ctx(upstream, method, state.era or Era.HANDSHAKE)
        return await judge_error(state.pipeline, reply, request_id, ctx)

    async def _on_link_state(self, link: UpstreamLink) -> None:
        """An upstream went down or came back: its items change, so tell the client."""
        if not link.up:
            self.server_requests.forget_link(link)  # a new process will not know those ids
        if link.up:
            await self.contracts_of(link).current()  # a new connection: read what it serves
        if not link.ever_answered:
            # Never answered anything (it dies at start): the client was shown nothing of it, so
            # nothing changed for it. Say once what failed instead of announcing every restart.
            if not link.up:
                await self._tell_failed_once(link)
            return
        if self.state.era is not None:
            for kind in ("tools", "prompts", "resources"):
                caps = (link.init_result or {}).get("capabilities") or {}
                if kind == "tools" or kind in caps:
                    await self._send(
                        jsonrpc.notification(f"notifications/{kind}/list_changed"), None
                    )

    async def _tell_failed_once(self, link: UpstreamLink) -> None:
        """One log message to a handshake-era client: this upstream failed before serving."""
        if self.state.era is not Era.HANDSHAKE or link.id in self._told_failed:
            return
        self._told_failed.add(link.id)
        reason = link.last_failure.value
        problem = f": {link.last_problem}" if link.last_problem else ""
        data = {
            "upstream": link.id,
            "reason": reason,
            "message": f"upstream {link.id!r} failed before serving anything ({reason}{problem}); "
            "mcpward restarts it with a growing backoff",
        }
        await self._send(
            jsonrpc.notification(
                "notifications/message", {"level": "error", "logger": "mcpward", "data": data}
            ),
            None,
        )

    def tell(self, text: str) -> None:
        """`_notice` from outside any request of this client (sent soon, in the background)."""
        if not self._closed:
            self._spawn(self._notice(text))

    async def _notice(self, text: str) -> None:
        """A guard's sentence for the person (a HOLD made, say), as a `notifications/message`
        warning a client can show; each sentence once per session, handshake era only (a
        2026-07-28 client has no channel for it outside a request: its call gets -32010)."""
        if self.state.era is not Era.HANDSHAKE or text in self._told_notices:
            return
        if len(self._told_notices) >= MAX_NOTICES:
            self._told_notices.clear()
        self._told_notices.add(text)
        await self._send(
            jsonrpc.notification(
                "notifications/message", {"level": "warning", "logger": "mcpward", "data": text}
            ),
            None,
        )

    def _request_done(self, request_id: RequestId, task: asyncio.Task[None]) -> None:
        if self._inflight.get(request_id) is task:
            del self._inflight[request_id]

    def in_flight(self, request_id: RequestId) -> bool:
        """Whether the client's request `request_id` may still be answered."""
        return request_id in self._inflight

    # ---- helpers -------------------------------------------------------------------------

    async def _send(self, message: Message, related: RequestId | None) -> None:
        if self._closed:
            return
        try:
            await self.downstream.send(message, related)
        except Exception as exc:
            log.debug("client send failed: %s", type(exc).__name__)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _record(self, record: DecisionRecord) -> None:
        await self.services.recorder.record(record)

    async def _publish(self, snap: UpstreamSnapshot) -> None:
        """A read of one of this session's connections: route by it, and tell the gateway."""
        if self.state.ns.enabled:
            self.routes.learn_snapshot(snap)
        await self.services.catalog.publish(snap)

    async def _refresh_all(self) -> None:
        """Re-read every live upstream connection of this session (each read shared)."""
        await asyncio.gather(
            *(self._contracts[u].reread() for u, link in self.links.items() if link.up),
            return_exceptions=True,
        )

    # ---- shutdown ------------------------------------------------------------------------------

    async def drain(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) for the requests in flight to be answered."""
        pending = list(self._inflight.values())
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        catalog = self.services.catalog
        for upstream_id, fetcher in self._fetchers.items():
            catalog.clear_fetcher(upstream_id, fetcher)
        for contracts in self._contracts.values():
            contracts.close()
        for task in list(self._inflight.values()) + list(self._background):
            task.cancel()
        await asyncio.gather(
            *(link.close() for link in self.links.values()), return_exceptions=True
        )
        for task in list(self._inflight.values()) + list(self._background):
            with contextlib.suppress(BaseException):
                await task


def _is_modern(message: Message) -> bool:
    params = message.get("params")
    return isinstance(params, dict) and message_era(params) is Era.MODERN
