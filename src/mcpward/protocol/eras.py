"""The two protocol eras (handshake up to 2025-11-25, stateless 2026-07-28) and era-correct results.

A message's era is read from the message itself, never assumed from the session.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = "2025-11-25"
LATEST_MODERN = "2026-07-28"

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# Results the 2026-07-28 schema requires `ttlMs` and `cacheScope` on (SEP-2549).
CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


class Era(Enum):
    HANDSHAKE = "handshake"
    MODERN = "2026-07-28"


def message_era(params: dict[str, Any] | None) -> Era:
    """The era a request declares: modern iff its _meta names a modern protocol version."""
    if params:
        meta = params.get("_meta")
        if isinstance(meta, dict) and meta.get(META_PROTOCOL_VERSION) in MODERN_VERSIONS:
            return Era.MODERN
    return Era.HANDSHAKE


def complete_result(
    value: dict[str, Any], era: Era, server_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Make a synthesised result valid for the era of the request it answers."""
    if era is Era.MODERN:
        value.setdefault("resultType", "complete")
        if server_info is not None:
            meta = value.setdefault("_meta", {})
            if isinstance(meta, dict):
                meta.setdefault(META_SERVER_INFO, server_info)
    return value


def modern_fields(method: str, result: dict[str, Any]) -> None:
    """Add what 2026-07-28 requires and a handshake-era server (bridged) never sends: `resultType`,
    and on cacheable results `ttlMs: 0` with `cacheScope: "private"` (nothing known about the
    result's freshness or audience: not to be cached, never shared)."""
    if "resultType" not in result:
        result["resultType"] = "complete"
    if method in CACHEABLE_METHODS and result.get("resultType") == "complete":
        result.setdefault("ttlMs", 0)
        result.setdefault("cacheScope", "private")
