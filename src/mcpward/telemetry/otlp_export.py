"""The span exporter of `telemetry.otlp_endpoint`: spans encoded as OTLP/HTTP protobuf and POSTed
with a sender the gateway gives (its egress-filtered poster), so an export is an outgoing
connection like any other. Imported only when traces are configured (it needs OpenTelemetry)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.util.re import parse_env_headers

log = logging.getLogger("mcpward.telemetry")

# (url, body, headers) -> HTTP status; raises when the request cannot be made
Send = Callable[[str, bytes, Mapping[str, str]], int]
CLOSE_NOTHING: Callable[[], None] = lambda: None  # noqa: E731
LOG_EVERY_S = 60.0  # a collector that stays away is logged once a minute, not once per batch


def operator_headers() -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_TRACES_HEADERS (else OTEL_EXPORTER_OTLP_HEADERS) of the operator's own
    environment, as OpenTelemetry's exporter reads them; nothing of a client's ever goes along."""
    value = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    return dict(parse_env_headers(value, liberal=True)) if value else {}


class SendingSpanExporter(SpanExporter):
    """One POST per batch; a failed batch is dropped (traces are best effort) and logged, with
    the collector's host and the reason, never a span."""

    def __init__(self, endpoint: str, send: Send, close: Callable[[], None] = CLOSE_NOTHING):
        self._endpoint = endpoint
        self._host = urlsplit(endpoint).hostname or "?"
        self._send = send
        self._close = close
        self._headers = {**operator_headers(), "Content-Type": "application/x-protobuf"}
        self._logged_at = -LOG_EVERY_S
        self.exported = 0  # spans the collector accepted
        self.failed = 0  # spans dropped

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        body = encode_spans(spans).SerializePartialToString()
        try:
            status = self._send(self._endpoint, body, self._headers)
        except Exception as exc:  # refused by the egress filter, unreachable, timed out
            return self._dropped(len(spans), f"{type(exc).__name__}: {exc}")
        if not 200 <= status < 300:
            return self._dropped(len(spans), f"the collector answered HTTP {status}")
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def _dropped(self, count: int, reason: str) -> SpanExportResult:
        self.failed += count
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            self._logged_at = now
            log.warning(
                "traces not exported to %s (%d span(s) dropped): %s", self._host, count, reason
            )
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
