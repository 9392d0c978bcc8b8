"""Builds the connector for an upstream's config entry (stdio process or Streamable HTTP)."""

from __future__ import annotations

from mcpward.config.models import GatewaySettings, HttpUpstream, StdioUpstream
from mcpward.transport.upstream import UpstreamConnection
from mcpward.transport.upstream_stdio import StdioUpstreamConnection


def make_connection(
    spec: StdioUpstream | HttpUpstream, settings: GatewaySettings
) -> UpstreamConnection:
    if isinstance(spec, StdioUpstream):
        return StdioUpstreamConnection(spec, settings.max_frame_bytes)
    from mcpward.transport.upstream_http import HttpUpstreamConnection

    return HttpUpstreamConnection(spec, settings.max_frame_bytes)
