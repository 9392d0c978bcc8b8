"""What every session of one gateway shares: the pipeline, the catalog, the namespace, the
recorder, the factory of upstream links and the call tracer (when traces are configured).
The gateway builds it once; sessions only read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mcpward.evidence.record import Recorder
from mcpward.pipeline.executor import Pipeline
from mcpward.relay.catalog import Catalog
from mcpward.relay.links import MessageHandler, StateHandler, UpstreamLink
from mcpward.relay.naming import Namespace
from mcpward.relay.process_pool import Tenant
from mcpward.relay.refused import Refusal
from mcpward.relay.traced import CallTracer

LinkFactory = Callable[[str, MessageHandler, StateHandler, Tenant], UpstreamLink]


def _nothing() -> None:
    """No work when a session opens (tests, the library wrapper)."""


@dataclass(frozen=True, slots=True)
class SessionServices:
    """The gateway-wide parts a session works with (no back-reference to the gateway)."""

    pipeline: Pipeline
    catalog: Catalog
    namespace: Namespace
    recorder: Recorder
    upstream_ids: Sequence[str]
    connect_timeout_s: float
    make_link: LinkFactory
    tracer: CallTracer | None = None  # only when telemetry.otlp_endpoint is set
    # Upstreams a guard refused before start: never started, never listed, calls denied.
    refused: Mapping[str, Refusal] = field(default_factory=dict)
    # Called when a session has answered its client's initialize or server/discover: the
    # gateway then builds what the first list or call would otherwise wait for.
    opened: Callable[[], None] = _nothing
