"""A 2026-07-28 client of one handshake-only server (bridged by the gateway) gets results that
are valid at 2026-07-28: `resultType` on every result, and `ttlMs` and `cacheScope` on every list
and read result, which that schema requires and the handshake-era server never sends."""

from __future__ import annotations

from tests.relay.conftest import GatewayFactory
from tests.support.gateway import everything_upstream

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
LISTS_AND_READS = [
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "demo://resource/static/document/architecture.md"}),
]


async def test_bridged_lists_and_reads_carry_the_required_cache_fields(
    gateway: GatewayFactory,
) -> None:
    async with gateway([everything_upstream()], initialize=False) as peer:
        for method, params in LISTS_AND_READS:
            reply = await peer.request(method, {**params, "_meta": MODERN_META})
            result = reply.get("result")
            assert isinstance(result, dict), (method, reply)
            assert result["resultType"] == "complete", method
            assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0, method
            assert result["cacheScope"] in ("public", "private"), method
        called = await peer.request(
            "tools/call", {"name": "echo", "arguments": {"message": "x"}, "_meta": MODERN_META}
        )
        assert called["result"]["resultType"] == "complete"
        assert "ttlMs" not in called["result"]  # a call's result is not cacheable
