"""OpenTelemetry traces of judged calls, exported over OTLP/HTTP to the configured endpoint only.

Built only when `telemetry.otlp_endpoint` is set: OpenTelemetry is imported here lazily, so a
gateway without it pays nothing. A provider of this gateway's own; the global one is untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcpward.telemetry.settings import TelemetrySettings

if TYPE_CHECKING:
    from opentelemetry.trace import Span


class TracingUnavailable(RuntimeError):
    """Traces are configured but OpenTelemetry is not installed (the `otel` extra)."""


class Tracing:
    """Starts spans of judged calls; one per gateway. `send` POSTs an export (url, body, headers)
    and returns the HTTP status: the gateway gives its egress-filtered poster, so the collector is
    dialled like every other outgoing connection; `close` releases it at shutdown."""

    def __init__(
        self,
        settings: TelemetrySettings,
        send: Callable[[str, bytes, Mapping[str, str]], int],
        close: Callable[[], None],
    ) -> None:
        endpoint = settings.otlp_endpoint
        if endpoint is None:
            raise ValueError("Tracing needs telemetry.otlp_endpoint")
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

            from mcpward.telemetry.otlp_export import SendingSpanExporter
        except ImportError as exc:
            raise TracingUnavailable(
                "telemetry.otlp_endpoint is set but OpenTelemetry is not installed: "
                f"install mcpward[otel] ({exc.name} is missing)"
            ) from None
        self._trace = trace
        self.exporter = SendingSpanExporter(endpoint, send, close)
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": settings.service_name}),
            sampler=ParentBased(TraceIdRatioBased(settings.sampling_ratio)),
        )
        self._provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self._tracer = self._provider.get_tracer("mcpward")

    def start(
        self,
        name: str,
        attributes: dict[str, Any],
        parent: Span | None = None,
        start_ns: int | None = None,
    ) -> Span:
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(
            name,
            context=context,
            attributes=attributes,
            start_time=start_ns if start_ns is not None else time.time_ns(),
        )

    def error(self, span: Span, description: str) -> None:
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, description))

    @staticmethod
    def traceparent(span: Span) -> str | None:
        """The W3C traceparent naming `span` (None if it is not sampled or not valid)."""
        context = span.get_span_context()
        if not context.is_valid:
            return None
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    def flush(self, timeout_ms: int = 5000) -> bool:
        return bool(self._provider.force_flush(timeout_ms))

    def shutdown(self) -> None:
        self._provider.shutdown()
