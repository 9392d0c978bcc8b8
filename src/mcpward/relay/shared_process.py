"""One stdio upstream process shared by several sessions: the gateway does its handshake once,
and each session talks through its own lease with request ids and progress tokens remapped.

A shared process is told of no client capabilities, so it sends no server->client requests
(sampling, elicitation, roots): those belong to one session and would have no single owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import LATEST_HANDSHAKE, META_SUBSCRIPTION_ID
from mcpward.protocol.errors import UpstreamFailure
from mcpward.relay.merge import GATEWAY_INFO
from mcpward.telemetry.log_limits import LimitedLog
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable

log = logging.getLogger("mcpward.relay")

HANDSHAKE_ID = "mcpward-handshake"
Delivery = dict[str, Any] | UpstreamUnavailable
Attach = Callable[["SharedLease"], Awaitable["SharedProcess"]]


class SharedProcess:
    """The multiplexer over one started connection: routes every answer and notification to
    the lease it belongs to, and broadcasts what belongs to the process (list_changed, logs)."""

    def __init__(self, connection: UpstreamConnection) -> None:
        self.connection = connection
        self.leases: set[SharedLease] = set()
        self.init_result: dict[str, Any] | None = None
        self.alive = False
        self.idle_since = time.monotonic()
        self._ids = itertools.count(1)
        # our id -> (lease, the lease's own id, the lease's progress token or None)
        self._routes: dict[int, tuple[SharedLease, Any, Any]] = {}
        self._subscribers: dict[str, set[SharedLease]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.on_gone: Callable[[SharedProcess], None] = lambda _: None
        self._limited = LimitedLog(log)

    @property
    def pid(self) -> int | None:
        pid = getattr(self.connection, "pid", None)
        return pid if isinstance(pid, int) else None

    async def open(self, timeout_s: float) -> None:
        """Start the process and do its handshake as the gateway, with no client capabilities.

        A server that refuses `initialize` (2026-07-28 only) stays usable: sessions then send
        their own `server/discover` and per-request `_meta`."""
        await self.connection.start()
        params = {
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": {},
            "clientInfo": dict(GATEWAY_INFO),
        }
        await self.connection.send(jsonrpc.request(HANDSHAKE_ID, methods.INITIALIZE, params))
        async with asyncio.timeout(timeout_s):
            while True:
                reply = await self.connection.receive()
                if reply.get("id") == HANDSHAKE_ID and "method" not in reply:
                    break
        if isinstance(reply.get("result"), dict):
            self.init_result = reply["result"]
            await self.connection.send(jsonrpc.notification(methods.INITIALIZED, None))
        self.alive = True
        self._reader = asyncio.create_task(self._read_loop(), name="shared-upstream")

    # ---- lease -> process -----------------------------------------------------------------------

    async def send(self, lease: SharedLease, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            return  # an answer to a server request: a shared process is never sent one
        if "id" not in message:
            await self._notify(lease, message)
            return
        local = self._local_answer(lease, message)
        if local is not None:
            lease.deliver(local)
            return
        ours = next(self._ids)
        params = message.get("params")
        token = None
        if isinstance(params, dict):
            meta = params.get("_meta")
            if isinstance(meta, dict) and "progressToken" in meta:
                token = meta["progressToken"]
                params = {**params, "_meta": {**meta, "progressToken": ours}}
        self._routes[ours] = (lease, message["id"], token)
        lease.outgoing[message["id"]] = ours
        await self.connection.send(
            {**message, "id": ours, "params": params} if params else {**message, "id": ours}
        )

    def _local_answer(self, lease: SharedLease, message: dict[str, Any]) -> dict[str, Any] | None:
        """What the gateway answers for the process: its handshake, and subscriptions other
        sessions already hold (the process keeps one per URI)."""
        method, rid = message["method"], message["id"]
        if method == methods.INITIALIZE and self.init_result is not None:
            return jsonrpc.result(rid, dict(self.init_result))
        params = message.get("params") or {}
        uri = params.get("uri") if isinstance(params, dict) else None
        if method == methods.RESOURCES_SUBSCRIBE and isinstance(uri, str):
            holders = self._subscribers.setdefault(uri, set())
            already = bool(holders)
            holders.add(lease)
            return jsonrpc.result(rid, {}) if already else None
        if method == methods.RESOURCES_UNSUBSCRIBE and isinstance(uri, str):
            holders = self._subscribers.get(uri, set())
            holders.discard(lease)
            return jsonrpc.result(rid, {}) if holders else None
        return None

    async def _notify(self, lease: SharedLease, message: dict[str, Any]) -> None:
        method = message["method"]
        if method in (methods.INITIALIZED, "notifications/roots/list_changed"):
            return  # the gateway did the handshake; the process was given no roots
        if method == methods.CANCELLED:
            params = message.get("params") or {}
            ours = lease.outgoing.get(params.get("requestId"))
            if ours is None:
                return
            message = {**message, "params": {**params, "requestId": ours}}
        await self.connection.send(message)

    def detach(self, lease: SharedLease) -> None:
        self.leases.discard(lease)
        for ours in [k for k, (owner, _, _) in self._routes.items() if owner is lease]:
            del self._routes[ours]
        for holders in self._subscribers.values():
            holders.discard(lease)
        if not self.leases:
            self.idle_since = time.monotonic()

    # ---- process -> leases ----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        upstream = self.connection.upstream_id
        try:
            while True:
                message = await self.connection.receive()
                try:
                    await self._route(message)
                except Exception as exc:  # one frame never takes the process from every lease
                    self._limited.log(
                        logging.WARNING,
                        upstream,
                        "unroutable frame",
                        "shared upstream %s: a frame could not be routed (%s); dropped",
                        upstream,
                        type(exc).__name__,
                    )
        except asyncio.CancelledError:
            raise
        except UpstreamUnavailable as exc:
            self._gone(exc)
        except Exception as exc:
            log.error("shared upstream %s reader failed: %s", upstream, type(exc).__name__)
            self._gone(UpstreamUnavailable(UpstreamFailure.UNPARSEABLE, "reader failed"))

    async def _route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            rid = message.get("id")
            # only our own integer ids route (an array id is not even hashable); the lease's
            # link checks the rest of the answer
            entry = self._routes.pop(rid, None) if isinstance(rid, int) else None
            if entry is not None:
                lease, theirs, _ = entry
                lease.outgoing.pop(theirs, None)
                lease.deliver({**message, "id": theirs})
            return
        if "id" in message:
            await self._server_request(message)
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        if method == methods.PROGRESS:
            token = params.get("progressToken")
            entry = self._routes.get(token) if isinstance(token, int) else None
            if entry is not None and entry[2] is not None:
                entry[0].deliver({**message, "params": {**params, "progressToken": entry[2]}})
        elif isinstance(meta, dict) and META_SUBSCRIPTION_ID in meta:
            entry = self._route_by_text(meta[META_SUBSCRIPTION_ID])
            if entry is not None:
                meta = {**meta, META_SUBSCRIPTION_ID: str(entry[1])}
                entry[0].deliver({**message, "params": {**params, "_meta": meta}})
        elif method == methods.CANCELLED:
            return  # it would cancel a server request; a shared process is never sent one
        elif method == "notifications/resources/updated":
            for lease in list(self._subscribers.get(str(params.get("uri")), ())):
                lease.deliver(message)
        else:
            for lease in list(self.leases):
                lease.deliver(message)

    def _route_by_text(self, ours: object) -> tuple[SharedLease, Any, Any] | None:
        for key, entry in self._routes.items():
            if str(key) == str(ours):
                return entry
        return None

    async def _server_request(self, message: dict[str, Any]) -> None:
        if message["method"] == methods.PING:
            reply = jsonrpc.result(message["id"], {})
        else:
            reply = jsonrpc.error(
                message["id"],
                errors.METHOD_NOT_FOUND,
                "this upstream process is shared by several sessions; the gateway declared "
                "no client capabilities to it",
            )
        with contextlib.suppress(UpstreamUnavailable):
            await self.connection.send(reply)

    def _gone(self, exc: UpstreamUnavailable) -> None:
        self.alive = False
        self._routes.clear()
        for lease in list(self.leases):
            lease.deliver(exc)
        self.on_gone(self)

    async def close(self) -> None:
        self.alive = False
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        for lease in list(self.leases):
            lease.deliver(UpstreamUnavailable(UpstreamFailure.SHUTTING_DOWN))
        await self.connection.close()


class SharedLease(UpstreamConnection):
    """One session's connection to a shared process: what the link sees as its upstream."""

    def __init__(self, upstream_id: str, digest: str, attach: Attach) -> None:
        super().__init__(upstream_id)
        self._digest = digest
        self._attach = attach
        self.process: SharedProcess | None = None
        self.outgoing: dict[Any, int] = {}  # the lease's request id -> the process's id
        self._queue: asyncio.Queue[Delivery] = asyncio.Queue()

    @property
    def identity_digest(self) -> str:
        return self._digest

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self) -> None:
        await self.close()
        self._queue = asyncio.Queue()
        self.process = await self._attach(self)

    def deliver(self, item: Delivery) -> None:
        self._queue.put_nowait(item)

    async def send(self, message: dict[str, Any]) -> None:
        process = self.process
        if process is None or not process.alive:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, "process is not running")
        await process.send(self, message)

    async def receive(self) -> dict[str, Any]:
        if self.process is None:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED)
        item = await self._queue.get()
        if isinstance(item, UpstreamUnavailable):
            raise item
        return item

    async def close(self) -> None:
        process, self.process = self.process, None
        self.outgoing.clear()
        if process is not None:
            process.detach(self)
