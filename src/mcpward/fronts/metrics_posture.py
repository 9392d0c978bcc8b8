"""Where stdio mode's `/metrics` listener may listen, checked before anything starts: loopback
unless the non-loopback address is acknowledged, and then only with a bearer token. No server
library is imported here (the listener itself is `fronts.metrics_listener`)."""

from __future__ import annotations

from mcpward.config.http_front import parse_http_address
from mcpward.hosts import is_loopback_host
from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.telemetry.settings import TelemetrySettings


class MetricsListenerRefused(ValueError):
    """The listener cannot start as configured; the message says what to change."""


def listen_address(settings: TelemetrySettings) -> tuple[str, int]:
    """(host, port) of `telemetry.metrics_listen`, after the loopback posture check."""
    if settings.metrics_listen is None:
        raise MetricsListenerRefused("telemetry.metrics_listen is not set")
    try:
        host, port = parse_http_address(settings.metrics_listen)
    except ValueError as exc:
        raise MetricsListenerRefused(f"telemetry.metrics_listen: {exc}") from None
    loopback = is_loopback_host(host)
    if not loopback and not settings.metrics_allow_non_loopback:
        raise MetricsListenerRefused(
            f"telemetry.metrics_listen {host!r} is not a loopback address, and the "
            "acknowledgement is missing: also set telemetry.metrics_allow_non_loopback: true "
            "(command line: --metrics-allow-non-loopback)"
        )
    if not loopback and settings.metrics_token is None:
        raise MetricsListenerRefused(
            f"telemetry.metrics_listen {host!r} is not a loopback address: set "
            "telemetry.metrics_token (env or file) so that only your scraper can read /metrics"
        )
    if loopback and settings.metrics_allow_non_loopback:
        raise MetricsListenerRefused(
            "telemetry.metrics_allow_non_loopback is set but telemetry.metrics_listen "
            f"({host!r}) is loopback; remove the acknowledgement or use a non-loopback address"
        )
    return host, port


def metrics_token(settings: TelemetrySettings) -> bytes | None:
    """The bearer token the listener asks for (None: none configured)."""
    if settings.metrics_token is None:
        return None
    try:
        token = resolve_secret(settings.metrics_token)
    except SecretUnavailable as exc:
        raise MetricsListenerRefused(f"telemetry.metrics_token: {exc}") from None
    if len(token) < 16:
        raise MetricsListenerRefused("telemetry.metrics_token must be at least 16 characters")
    return token.encode()
