"""The gateway core every front feeds: config in, guards attached, sessions out.

Fronts only move frames; a session judges them (judged calls: `relay.judged`, the one place).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpward.config.loader import LoadedConfig
from mcpward.config.upstreams import StdioUpstream
from mcpward.evidence.record import NullRecorder, Recorder
from mcpward.pipeline.context import Identity
from mcpward.pipeline.executor import Pipeline
from mcpward.pipeline.services import GatewayServices
from mcpward.relay.catalog import Catalog
from mcpward.relay.links import MessageHandler, UpstreamLink
from mcpward.relay.naming import Namespace
from mcpward.relay.process_pool import ProcessPool, Tenant
from mcpward.relay.refused import (
    Refusal,
    RefusedConnection,
    may_refuse_upstreams,
    refused_upstreams,
)
from mcpward.relay.replica_start import open_replica, replica_readiness, replica_recorder
from mcpward.relay.session import Downstream, Session
from mcpward.relay.shared import SessionServices
from mcpward.relay.traced import CallTracer
from mcpward.store.factory import StoreContext, context_from_config
from mcpward.store.keys import KeyFileError
from mcpward.store.paths import resolve_state_dir
from mcpward.store.postgres.errors import PostgresUnavailable
from mcpward.store.replica import ReplicaStore
from mcpward.telemetry.settings import TelemetrySettings
from mcpward.telemetry.tracing import Tracing
from mcpward.upstreams.base import UpstreamConnection
from mcpward.upstreams.connectors import make_connection

if TYPE_CHECKING:
    from mcpward.telemetry.metrics import GatewayMetrics
    from mcpward.upstreams.stdio import StdioUpstreamConnection

log = logging.getLogger("mcpward.gateway")


ConnectionFactory = Callable[[], UpstreamConnection]


class GatewayStartError(Exception):
    """The gateway cannot start (a guard failed to load); the message says which and why."""


class Gateway:
    """What all sessions share: the pipeline, the catalog, the recorder, the upstream specs."""

    def __init__(
        self,
        loaded: LoadedConfig,
        state_dir: Path,
        recorder: Recorder | None = None,
        connections: Mapping[str, ConnectionFactory] | None = None,
        processes: ProcessPool | None = None,
    ) -> None:
        config = loaded.config
        # Upstreams reached in-process (the library wrapper) instead of by their config entry.
        self._connections = dict(connections or {})
        self.loaded = loaded
        self.config = config
        self.settings = config.gateway
        self.state_dir = state_dir
        self.specs = {u.id: u for u in config.upstreams}
        self.upstream_ids = [u.id for u in config.upstreams]
        self.namespace = Namespace(
            self.upstream_ids, self.settings.namespace_separator, config.namespaced()
        )
        self.pipeline = Pipeline(loaded.build_guards(), mode=self.settings.mode)
        self.catalog = Catalog(self.upstream_ids)
        self.recorder: Recorder = recorder or NullRecorder()
        telemetry = config.telemetry
        # Counted only when someone can read them: /metrics on the HTTP front (admin token) or
        # the stdio listener. Otherwise nothing of the metrics is on the per-call path.
        self.metrics: GatewayMetrics | None = None
        if serves_metrics(loaded):  # prometheus_client loads only here
            from mcpward.relay.metered import MeteredRecorder, watch_gateway_state
            from mcpward.telemetry.metrics import GatewayMetrics

            self.metrics = GatewayMetrics(self.upstream_ids, telemetry.tool_label_cap)
            watch_gateway_state(self.metrics, self.recorder, lambda: self.store, state_dir)
            self.recorder = MeteredRecorder(self.recorder, self.metrics)
        self.tracing = _tracing(telemetry) if telemetry.otlp_endpoint is not None else None
        probes = {u.id: self._connect(u.id) for u in config.upstreams}  # never started
        self.identities = {uid: c.identity_digest for uid, c in probes.items()}
        # what a verdict's provenance names: the identity digest, and the executable's hash
        self.provenance = {
            uid: {"digest": c.identity_digest, "executable_sha256": _executable(c)}
            for uid, c in probes.items()
        }
        self.sessions: set[Session] = set()
        self.store: StoreContext | None = None  # the configured store (set by `start`)
        self.replica: ReplicaStore | None = None  # its PostgreSQL pool, held while serving
        # Readiness of the store (None = ready, else "store" or "migrations"); the HTTP front's
        # /readyz calls it. None here: the front checks that the state directory is writable.
        self.store_check: Callable[[], str | None] | None = None
        self.processes = processes or pool_for(loaded, self._connections)
        # Filled by `start` once the guards are attached (server_allowlist decides from config).
        self.refused: dict[str, Refusal] = {}
        self.session_services = SessionServices(
            pipeline=self.pipeline,
            catalog=self.catalog,
            namespace=self.namespace,
            recorder=self.recorder,
            upstream_ids=tuple(self.upstream_ids),
            connect_timeout_s=self.settings.connect_timeout_s,
            make_link=self.make_link,
            tracer=CallTracer(self.tracing) if self.tracing is not None else None,
            refused=self.refused,
            opened=self.warm_up,
        )
        self._relister: asyncio.Task[None] | None = None
        self.warming: asyncio.Future[None] | None = None

    @classmethod
    async def start(
        cls,
        loaded: LoadedConfig,
        recorder: Recorder | None = None,
        connections: Mapping[str, ConnectionFactory] | None = None,
        prestart: bool = False,
        started: Mapping[str, StdioUpstreamConnection] | None = None,
    ) -> Gateway:
        """Assemble the gateway and attach every guard. Upstreams start with the first session;
        with `prestart` (a stdio front, one session), each stdio upstream's process starts now,
        so that the server boots while the stores open and the guards attach, unless a guard
        could refuse an upstream before it starts (that decision comes first). `started`:
        processes already running for their upstream's entry (the quick form's), taken as those
        first processes, or stopped here."""
        processes = pool_for(loaded, connections or {})
        may_start = prestart and not may_refuse_upstreams(loaded.guard_classes())
        for conn in (started or {}).values():  # already running: the first session's, or gone
            if not (may_start and processes.adopt(conn)):
                await conn.close()
        if may_start:
            processes.prestart()
        try:
            return await cls._assemble(loaded, recorder, connections, processes)
        except BaseException:
            await processes.close()
            raise

    @classmethod
    async def _assemble(
        cls,
        loaded: LoadedConfig,
        recorder: Recorder | None,
        connections: Mapping[str, ConnectionFactory] | None,
        processes: ProcessPool,
    ) -> Gateway:
        state_dir = resolve_state_dir(loaded.config.state_dir)
        store = context_from_config(loaded.config, _config_path(loaded))
        try:
            replica = open_replica(store)  # PostgreSQL: starts even while the server is away
        except PostgresUnavailable as exc:
            raise GatewayStartError(f"store: {exc}") from None
        if recorder is None:
            try:
                recorder = replica_recorder(loaded.config.evidence, state_dir, store, replica)
            except KeyFileError as exc:  # a key missing, malformed or not the ledger's
                raise GatewayStartError(f"evidence: {exc}") from None
        gateway = cls(loaded, state_dir, recorder, connections, processes)
        gateway.store = store
        gateway.replica = replica
        if replica is not None:  # /readyz: the database answers, its schema is current
            gateway.store_check = replica_readiness(replica, recorder)
        services = GatewayServices(
            state_dir=state_dir,
            catalog=gateway.catalog,
            upstream_identities=dict(gateway.identities),
            upstream_provenance=dict(gateway.provenance),
            http_client=_egress_http_client,
            store=store,
            consult=loaded.config.consult,
            sandboxable=frozenset(
                u.id for u in loaded.config.upstreams if u.kind == "stdio" or u.owned
            ),
            console_url=loaded.config.gateway.console_url,
            tell_clients=gateway.tell_clients,
        )
        for guard in gateway.pipeline.guards:
            try:
                await guard.attach(services)
            except Exception as exc:
                await gateway.recorder.close()
                raise GatewayStartError(
                    f"guard {guard.id!r} ({guard.kind}) cannot start: {exc}"
                ) from exc
        gateway.pipeline.reindex()  # a guard may have narrowed its phases when it attached
        gateway.refuse(refused_upstreams(gateway.pipeline, gateway.upstream_ids))
        if gateway.settings.relist_interval_s > 0:
            gateway._relister = asyncio.create_task(gateway._relist_forever())
        return gateway

    def warm_up(self) -> None:
        """Build the guards' compiled rule sets in a worker thread, once: when the first
        session has answered its client (before that, the thread would hold the interpreter
        while the client waits for `initialize`). A list or call arriving sooner builds what it
        needs itself: no guard is ever skipped."""
        if self.warming is None:
            self.warming = asyncio.get_running_loop().run_in_executor(None, self.pipeline.warm)

    def refuse(self, refused: Mapping[str, Refusal]) -> None:
        """Upstreams that may not run: no process, no connection, no spare is ever made for
        them; the reason is logged here, once."""
        for upstream_id, refusal in refused.items():
            log.warning("upstream %s will not be started: %s", upstream_id, refusal.describe())
            self.processes.exclude(upstream_id)
        self.refused.update(refused)

    def make_link(
        self,
        upstream_id: str,
        on_message: MessageHandler,
        on_state: Callable[[UpstreamLink], Awaitable[None]],
        tenant: Tenant,
    ) -> UpstreamLink:
        spec = self.specs[upstream_id]
        refusal = self.refused.get(upstream_id)
        if refusal is not None:
            connection: UpstreamConnection = RefusedConnection(
                upstream_id, self.identities[upstream_id], refusal
            )
        elif upstream_id in self.processes.counts():
            connection = self.processes.connection(
                upstream_id, tenant, self.identities[upstream_id]
            )
        else:
            connection = self._connect(upstream_id)
        return UpstreamLink(
            connection,
            spec.restart,
            self.settings.request_timeout_s,
            self.settings.connect_timeout_s,
            on_message,
            on_state,
            self.metrics,
            send_timeout_s=self.settings.upstream_send_timeout_s,
            send_queue_bytes=self.settings.upstream_send_queue_bytes,
        )

    def _connect(self, upstream_id: str) -> UpstreamConnection:
        factory = self._connections.get(upstream_id)
        if factory is not None:
            return factory()
        return make_connection(self.specs[upstream_id], self.settings)

    async def open_session(
        self,
        downstream: Downstream,
        identity: Identity | None = None,
        session_id: str | None = None,
        stateless: bool = False,
    ) -> Session:
        tenant = tenant_of(identity, stateless)
        session = Session(self.session_services, downstream, identity, session_id, tenant)
        self.sessions.add(session)
        return session

    async def close_session(self, session: Session) -> None:
        self.sessions.discard(session)
        await session.close()

    def tell_clients(self, upstream: str, text: str) -> None:
        """Queue a sentence for the person at every session that uses this upstream."""
        for session in list(self.sessions):
            if upstream in session.links:
                session.tell(text)

    async def _relist_forever(self) -> None:
        """Re-read every upstream on a timer: catches a server that changes without telling."""
        while True:
            await asyncio.sleep(self.settings.relist_interval_s)
            for upstream_id in self.upstream_ids:
                if upstream_id in self.refused:
                    continue
                with contextlib.suppress(Exception):
                    await self.catalog.refresh(upstream_id)

    async def close(self) -> None:
        if self._relister is not None:
            self._relister.cancel()
        # All at once: each stop may wait out a server's grace periods (0.3 s + 1 s).
        await asyncio.gather(
            *(self.close_session(s) for s in list(self.sessions)),
            self.processes.close(),
            return_exceptions=True,
        )
        await self.pipeline.close()
        await self.recorder.close()
        if self.replica is not None:
            self.replica.close()
        if self.tracing is not None:  # exports what is batched (blocking I/O: off the loop)
            await asyncio.to_thread(self.tracing.shutdown)


def pool_for(loaded: LoadedConfig, connections: Mapping[str, ConnectionFactory]) -> ProcessPool:
    """The process pool of the configured stdio upstreams (not those reached in-process)."""
    pooled = {
        u.id: u
        for u in loaded.config.upstreams
        if isinstance(u, StdioUpstream) and u.id not in connections
    }
    return ProcessPool(pooled, loaded.config.gateway)


def _tracing(telemetry: TelemetrySettings) -> Tracing:
    """Traces exported through the egress filter (telemetry.otlp_allow_private)."""
    from mcpward.egress.policy import EgressPolicy
    from mcpward.egress.poster import EgressPoster

    poster = EgressPoster(EgressPolicy.from_allow_list(telemetry.otlp_allow_private))
    return Tracing(telemetry, poster.post, poster.close)


def _egress_http_client(allow_private: Sequence[str], timeout: float) -> Any:
    """An egress-filtered HTTP client for a guard that asks for one (httpx loads only then)."""
    from mcpward.egress.client import egress_http_client

    return egress_http_client(allow_private, timeout)


def serves_metrics(loaded: LoadedConfig) -> bool:
    """Metrics are kept when they are served: the stdio listener, or the HTTP front's /metrics
    (which needs the admin credential)."""
    config = loaded.config
    return (
        config.telemetry.metrics_listen is not None
        or getattr(config.front, "admin_token", None) is not None
    )


def tenant_of(identity: Identity | None, stateless: bool) -> Tenant:
    """Sessions share processes (where the policy allows) only within one client identity."""
    if identity is None:
        return Tenant("local", stateless)
    return Tenant(f"{identity.sub}\x00{identity.client_id or ''}", stateless)


def _executable(connection: UpstreamConnection) -> str | None:
    digest = getattr(connection, "executable_sha256", None)
    return digest if isinstance(digest, str) else None


def _config_path(loaded: LoadedConfig) -> Path | None:
    """The config file's path (None for a config parsed from memory, e.g. `<config>`)."""
    return None if loaded.source.startswith("<") else Path(loaded.source)
