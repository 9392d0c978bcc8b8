"""OpenTelemetry traces of judged calls, exported over OTLP/HTTP to the configured endpoint only.

Built only when `telemetry.otlp_endpoint` is set: OpenTelemetry is imported here lazily, so a
gateway without it pays nothing. A provider of this gateway's own; the global one is untouched.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcpward.telemetry.settings import TelemetrySettings

if TYPE_CHECKING:
    from opentelemetry.trace import Span


class TracingUnavailable(RuntimeError):
    """Traces are configured but OpenTelemetry is not installed (the `otel` extra)."""


class Tracing:
    """Starts spans of judged calls; one per gateway."""

    def __init__(self, settings: TelemetrySettings) -> None:
        endpoint = settings.otlp_endpoint
        if endpoint is None:
            raise ValueError("Tracing needs telemetry.otlp_endpoint")
        try:
            from opentelemetry import trace
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
        except ImportError as exc:
            raise TracingUnavailable(
                "telemetry.otlp_endpoint is set but OpenTelemetry is not installed: "
                f"install mcpward[otel] ({exc.name} is missing)"
            ) from None
        self._trace = trace
        # Headers: the exporter's own (and OTEL_EXPORTER_OTLP_*HEADERS of the operator's
        # environment, if set); nothing of a client's ever goes with the spans.
        exporter = OTLPSpanExporter(endpoint=endpoint, headers={}, timeout=10)
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": settings.service_name}),
            sampler=ParentBased(TraceIdRatioBased(settings.sampling_ratio)),
        )
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
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
