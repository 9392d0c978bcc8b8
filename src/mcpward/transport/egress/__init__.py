"""The egress filter: every connection the gateway itself opens (HTTP upstreams, JWKS, hook guards).

Use `egress_client(EgressPolicy.from_allow_list(upstream.allow_private))` for an httpx client.
"""

from mcpward.transport.egress.addresses import (
    AddressLiteralError,
    blocked_reason,
    parse_host_literal,
    parse_ipv4_literal,
)
from mcpward.transport.egress.client import EgressTransport, GuardedNetworkBackend, egress_client
from mcpward.transport.egress.policy import (
    EgressBlocked,
    EgressConfigError,
    EgressPolicy,
    parse_allow_list,
    system_resolver,
)

__all__ = [
    "AddressLiteralError",
    "EgressBlocked",
    "EgressConfigError",
    "EgressPolicy",
    "EgressTransport",
    "GuardedNetworkBackend",
    "blocked_reason",
    "egress_client",
    "parse_allow_list",
    "parse_host_literal",
    "parse_ipv4_literal",
    "system_resolver",
]
