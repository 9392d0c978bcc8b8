"""The egress filter: every connection the gateway itself opens (HTTP upstreams, JWKS, hook guards).

`egress_session(policy)` gives the aiohttp session HTTP upstreams use (the hot path);
`egress_client(policy)` gives an httpx client (JWKS fetches, HTTP hook guards).
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
from mcpward.transport.egress.session import GuardedResolver, egress_session

__all__ = [
    "AddressLiteralError",
    "EgressBlocked",
    "EgressConfigError",
    "EgressPolicy",
    "EgressTransport",
    "GuardedNetworkBackend",
    "GuardedResolver",
    "blocked_reason",
    "egress_client",
    "egress_session",
    "parse_allow_list",
    "parse_host_literal",
    "parse_ipv4_literal",
    "system_resolver",
]
