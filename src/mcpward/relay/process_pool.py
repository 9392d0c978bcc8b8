"""Upstream processes as a managed resource: caps per upstream and in total, warm spares handed
to new sessions, idle reaping, the sharing policy, and parallel shutdown.

A refusal is UpstreamUnavailable(CAPACITY): -32011 `capacity` on stdio, HTTP 503 on the front.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpward.config.models import GatewaySettings
from mcpward.config.upstreams import StdioUpstream
from mcpward.protocol import jsonrpc, methods
from mcpward.protocol.errors import UpstreamFailure
from mcpward.relay.shared_process import SharedLease, SharedProcess
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable
from mcpward.upstreams.stdio import StdioUpstreamConnection

log = logging.getLogger("mcpward.processes")

WARM_PROBE_ID = "mcpward-warm"
STATELESS_KEY = "*"


@dataclass(frozen=True, slots=True)
class Tenant:
    """Who a session's processes may be shared with: its client identity, and whether it is a
    2026-07-28 stateless session (whose every request carries its own `_meta`)."""

    identity: str
    stateless: bool = False


LOCAL = Tenant("local")


@dataclass(slots=True)
class UpstreamProcesses:
    """The processes of one stdio upstream."""

    spec: StdioUpstream
    count: int = 0  # every process of this upstream: in use, spare, warming, shared
    spares: list[StdioUpstreamConnection] = field(default_factory=list)
    warming: set[asyncio.Task[None]] = field(default_factory=set)
    shared: dict[str, SharedProcess] = field(default_factory=dict)
    counted: set[SharedProcess] = field(default_factory=set)  # shared processes in `count`
    opening: dict[str, asyncio.Task[SharedProcess]] = field(default_factory=dict)
    last_used: float = field(default_factory=time.monotonic)
    failed: bool = False
    waiting: int = 0  # sessions waiting for a spare that is still starting


class ProcessPool:
    """Every stdio upstream process of one gateway goes through here."""

    def __init__(
        self,
        specs: Mapping[str, StdioUpstream],
        settings: GatewaySettings,
    ) -> None:
        self._settings = settings
        self._warm = False  # turned on by warm_up(): spares help where sessions come and go
        self._upstreams = {uid: UpstreamProcesses(spec) for uid, spec in specs.items()}
        self.total = 0
        self._closing = False
        self._reaper: asyncio.Task[None] | None = None
        self._dedicated: set[StdioUpstreamConnection] = set()
        self._stopping: set[asyncio.Future[None]] = set()
        # Spares start a few at a time: a server's start-up is CPU-bound (an interpreter's
        # imports), and many at once thrash the host the sessions run on.
        self._start_slots = asyncio.Semaphore(max(2, os.cpu_count() or 2))

    # ---- what sessions get ----------------------------------------------------------------------

    def connection(self, upstream_id: str, tenant: Tenant, digest: str) -> UpstreamConnection:
        """The connection a session's link uses: its own process, or a lease on a shared one."""
        key = self.share_key(upstream_id, tenant)
        if key is None:
            return DedicatedConnection(self, upstream_id, digest)

        async def attach(lease: SharedLease) -> SharedProcess:
            return await self._attach(upstream_id, key, lease)

        return SharedLease(upstream_id, digest, attach)

    def share_key(self, upstream_id: str, tenant: Tenant) -> str | None:
        sharing = self._upstreams[upstream_id].spec.processes.sharing
        if sharing == "session":
            return None
        if sharing == "shared" and tenant.stateless:
            return STATELESS_KEY
        return f"identity:{tenant.identity}"

    def exclude(self, upstream_id: str) -> None:
        """An upstream that may never run (refused by a guard before start): no process, spare or
        shared, is ever made for it. Called before the first session."""
        ups = self._upstreams.pop(upstream_id, None)
        if ups is not None and ups.count:
            raise RuntimeError(f"upstream {upstream_id!r} already has processes")

    def refusal(self, tenant: Tenant) -> str | None:
        """The id of an upstream a new session of this tenant could not get a process from."""
        for upstream_id, ups in self._upstreams.items():
            key = self.share_key(upstream_id, tenant)
            if key is not None and key in ups.shared:
                continue
            if ups.spares or ups.warming or self._room(ups):
                continue
            return upstream_id
        return None

    # ---- dedicated processes --------------------------------------------------------------------

    async def take(self, upstream_id: str) -> StdioUpstreamConnection:
        """A started process for one session: a warm spare if there is one, else a new one."""
        ups = self._upstreams[upstream_id]
        ups.last_used = time.monotonic()
        while True:
            while ups.spares:
                conn = ups.spares.pop()
                if _running(conn):
                    self._dedicated.add(conn)
                    self._replenish(ups)
                    return conn
                await self._stop(ups, conn)
            # A spare already starting is ready sooner than a process started now: wait for
            # one if nobody else waits for it; at the cap, everyone waits for one.
            if ups.warming and (ups.waiting < len(ups.warming) or not self._room(ups)):
                ups.waiting += 1
                try:
                    await asyncio.wait(set(ups.warming), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ups.waiting -= 1
                continue
            break
        self._reserve(ups)
        conn = self._new_connection(ups)
        try:
            # Not probed: a dual-era server commits to the era of its first message, and this
            # session's own first message (initialize or server/discover) must be that one.
            await conn.start()
        except BaseException:
            ups.failed = True
            await self._stop(ups, conn)
            raise
        ups.failed = False
        self._dedicated.add(conn)
        self._replenish(ups)
        return conn

    async def give_back(self, upstream_id: str, conn: StdioUpstreamConnection) -> None:
        """A session is done with its process: it stops (a used process is never reused)."""
        self._dedicated.discard(conn)
        await self._stop(self._upstreams[upstream_id], conn)

    # ---- shared processes -----------------------------------------------------------------------

    async def _attach(self, upstream_id: str, key: str, lease: SharedLease) -> SharedProcess:
        ups = self._upstreams[upstream_id]
        ups.last_used = time.monotonic()
        process = ups.shared.get(key)
        if process is None or not process.alive:
            task = ups.opening.get(key)
            if task is None:
                task = asyncio.create_task(self._open_shared(ups, key))
                ups.opening[key] = task
                task.add_done_callback(lambda _: ups.opening.pop(key, None))
            process = await asyncio.shield(task)
        process.leases.add(lease)
        return process

    async def _open_shared(self, ups: UpstreamProcesses, key: str) -> SharedProcess:
        self._reserve(ups)
        process = SharedProcess(self._new_connection(ups))
        try:
            async with self._start_slots:
                await process.open(self._settings.connect_timeout_s)
        except BaseException as exc:
            ups.failed = True
            await process.close()
            self._release(ups)
            if isinstance(exc, UpstreamUnavailable):
                raise
            if isinstance(exc, (TimeoutError, OSError)):
                raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, str(exc)) from None
            raise
        ups.failed = False

        def gone(dead: SharedProcess) -> None:
            if ups.shared.get(key) is dead:
                del ups.shared[key]
            if self._forget(ups, dead):
                closing = asyncio.ensure_future(dead.connection.close())
                self._stopping.add(closing)
                closing.add_done_callback(self._stopping.discard)

        process.on_gone = gone
        ups.shared[key] = process
        ups.counted.add(process)
        return process

    def _forget(self, ups: UpstreamProcesses, process: SharedProcess) -> bool:
        """Stop counting a shared process (once, whoever notices first: its reader, the
        reaper, shutdown); True if this call did."""
        if process not in ups.counted:
            return False
        ups.counted.discard(process)
        self._release(ups)
        return True

    # ---- caps -----------------------------------------------------------------------------------

    def _room(self, ups: UpstreamProcesses) -> bool:
        return (
            ups.count < ups.spec.processes.max_processes
            and self.total < self._settings.max_processes
        )

    def _reserve(self, ups: UpstreamProcesses) -> None:
        if self._closing:
            raise UpstreamUnavailable(UpstreamFailure.SHUTTING_DOWN)
        if not self._room(ups):
            raise UpstreamUnavailable(UpstreamFailure.CAPACITY, "process cap reached")
        ups.count += 1
        self.total += 1

    def _release(self, ups: UpstreamProcesses) -> None:
        ups.count -= 1
        self.total -= 1

    def _new_connection(self, ups: UpstreamProcesses) -> StdioUpstreamConnection:
        return StdioUpstreamConnection(ups.spec, self._settings.max_frame_bytes)

    async def _stop(self, ups: UpstreamProcesses, conn: StdioUpstreamConnection) -> None:
        self._release(ups)
        await conn.close()

    # ---- warm spares and reaping ----------------------------------------------------------------

    def warm_up(self) -> None:
        """Keep warm spares from now on (the HTTP front calls this; a stdio front has one
        session, so a spare would only cost memory)."""
        self._warm = True
        for ups in self._upstreams.values():
            self._replenish(ups)
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever())

    def adopt(self, conn: StdioUpstreamConnection) -> bool:
        """A process started before the gateway was assembled, for exactly this upstream's
        entry, becomes the spare the first session takes. False: not taken (the caller stops
        it): another entry, a shared upstream, one already started, or it already exited."""
        ups = self._upstreams.get(conn.upstream_id)
        if (
            ups is None
            or conn.spec != ups.spec
            or ups.spec.processes.sharing != "session"
            or ups.count
            or not self._room(ups)
            or not _running(conn)
        ):
            return False
        self._reserve(ups)
        ups.spares.append(conn)
        return True

    def prestart(self) -> list[str]:
        """Start each dedicated upstream's first process now, unprobed, for the first session to
        take (a stdio front has one session): the server boots while the gateway opens its
        stores and attaches its guards, instead of after. Returns the upstreams started."""
        started = []
        for upstream_id, ups in self._upstreams.items():
            if ups.spec.processes.sharing != "session" or ups.count or not self._room(ups):
                continue
            self._reserve(ups)
            task = asyncio.create_task(self._warm_one(ups, probe=False))
            ups.warming.add(task)
            task.add_done_callback(ups.warming.discard)
            started.append(upstream_id)
        return started

    def _replenish(self, ups: UpstreamProcesses) -> None:
        wanted = ups.spec.processes.warm_spares if self._warm else 0
        if ups.spec.processes.sharing != "session":
            wanted = 0  # a shared process serves every new session of its tenant at once
        while not self._closing and len(ups.spares) + len(ups.warming) < wanted and self._room(ups):
            self._reserve(ups)
            task = asyncio.create_task(self._warm_one(ups))
            ups.warming.add(task)
            task.add_done_callback(ups.warming.discard)

    async def _warm_one(self, ups: UpstreamProcesses, probe: bool = True) -> None:
        """One spare: started, answering (unless `probe` is off), then put in the spares."""
        conn = self._new_connection(ups)
        try:
            async with self._start_slots:
                await (self._start_and_probe(conn) if probe else conn.start())
        except asyncio.CancelledError:
            await self._stop(ups, conn)
            raise
        except Exception as exc:
            log.warning("upstream %s: a warm spare did not start: %s", ups.spec.id, exc)
            ups.failed = True
            await self._stop(ups, conn)
            return
        ups.failed = False
        if self._closing:
            await self._stop(ups, conn)
            return
        ups.spares.append(conn)

    async def _start_and_probe(self, conn: StdioUpstreamConnection) -> None:
        """Start a spare and wait until it answers a ping (servers answer one before
        `initialize`; any answer, even an error, shows it has finished starting). A dual-era
        server takes the ping as its era: a 2026-07-28 session given this spare is bridged."""
        await conn.start()
        await conn.send(jsonrpc.request(WARM_PROBE_ID, methods.PING, None))
        async with asyncio.timeout(self._settings.connect_timeout_s):
            while (await conn.receive()).get("id") != WARM_PROBE_ID:
                pass

    async def _reap_forever(self) -> None:
        while True:
            idle = min(
                (u.spec.processes.idle_timeout_s for u in self._upstreams.values()), default=120.0
            )
            await asyncio.sleep(max(0.05, min(30.0, idle / 4)))
            await self.reap()

    async def reap(self) -> None:
        """Stop the spares of an upstream nobody used for its idle timeout, and shared
        processes no session has held for as long."""
        now = time.monotonic()
        stops: list[Any] = []
        for ups in self._upstreams.values():
            idle_s = ups.spec.processes.idle_timeout_s
            if ups.spares and now - ups.last_used > idle_s:
                spares, ups.spares = ups.spares, []
                stops += [self._stop(ups, conn) for conn in spares]
            for key, process in list(ups.shared.items()):
                if not process.leases and now - process.idle_since > idle_s:
                    del ups.shared[key]
                    if self._forget(ups, process):
                        stops.append(process.close())
        if stops:
            log.info("stopped %d idle upstream processes", len(stops))
            await asyncio.gather(*stops, return_exceptions=True)

    # ---- state ----------------------------------------------------------------------------------

    def ready(self) -> bool:
        """Every stdio upstream can serve: its last start worked, and its spares are warm."""
        for ups in self._upstreams.values():
            if ups.failed:
                return False
            wanted = self._warm and ups.spec.processes.warm_spares > 0
            dedicated = ups.spec.processes.sharing == "session"
            # nothing serving yet and the spares still starting
            if wanted and dedicated and not ups.spares and ups.count == len(ups.warming):
                return False
        return True

    def counts(self) -> dict[str, int]:
        return {uid: ups.count for uid, ups in self._upstreams.items()}

    async def close(self) -> None:
        """Stop every spare and shared process, all at once (sessions stop their own)."""
        self._closing = True
        if self._reaper is not None:
            self._reaper.cancel()
        stops: list[Any] = []
        for ups in self._upstreams.values():
            for task in list(ups.warming):
                task.cancel()
            stops += list(ups.warming)
            spares, ups.spares = ups.spares, []
            stops += [self._stop(ups, conn) for conn in spares]
            ups.shared = {}
            for process in list(ups.counted):
                self._forget(ups, process)
                stops.append(process.close())
        stops += list(self._stopping)
        await asyncio.gather(*stops, return_exceptions=True)


class DedicatedConnection(UpstreamConnection):
    """One session's own process, taken from the pool (warm if a spare was ready)."""

    def __init__(self, pool: ProcessPool, upstream_id: str, digest: str) -> None:
        super().__init__(upstream_id)
        self._pool = pool
        self._digest = digest
        self._conn: StdioUpstreamConnection | None = None

    @property
    def identity_digest(self) -> str:
        return self._digest

    @property
    def pid(self) -> int | None:
        return self._conn.pid if self._conn is not None else None

    async def start(self) -> None:
        await self.close()
        self._conn = await self._pool.take(self.upstream_id)

    async def send(self, message: dict[str, Any]) -> None:
        if self._conn is None:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, "process is not running")
        await self._conn.send(message)

    async def send_encoded(self, message: dict[str, Any], data: bytes) -> None:
        if self._conn is None:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, "process is not running")
        await self._conn.send_encoded(message, data)

    async def receive(self) -> dict[str, Any]:
        if self._conn is None:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED)
        return await self._conn.receive()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await self._pool.give_back(self.upstream_id, conn)


def _running(conn: StdioUpstreamConnection) -> bool:
    return conn.pid is not None and conn.returncode is None
