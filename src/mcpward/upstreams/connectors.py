"""Builds the connector for an upstream's config entry (stdio process or Streamable HTTP)."""

from __future__ import annotations

from mcpward.config.models import GatewaySettings
from mcpward.config.upstreams import HttpUpstream, StdioUpstream
from mcpward.upstreams.base import UpstreamConnection
from mcpward.upstreams.stdio import StdioUpstreamConnection


def make_connection(
    spec: StdioUpstream | HttpUpstream, settings: GatewaySettings
) -> UpstreamConnection:
    if isinstance(spec, StdioUpstream):
        return StdioUpstreamConnection(spec, settings.max_frame_bytes)
    from mcpward.upstreams.http import HttpUpstreamConnection

    return HttpUpstreamConnection(spec, settings.max_frame_bytes)
