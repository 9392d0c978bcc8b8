"""An operator-given endpoint judged against the egress policy at config time (no DNS): an
address literal, or localhost, that the filter would refuse is refused before anything starts.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from mcpward.egress.addresses import AddressLiteralError, IPAddress, parse_host_literal
from mcpward.egress.policy import EgressBlocked, EgressPolicy

_LOCALHOST: tuple[IPAddress, ...] = (
    ipaddress.IPv4Address("127.0.0.1"),
    ipaddress.IPv6Address("::1"),
)


def endpoint_refusal(url: str, allow_private: Sequence[str]) -> str | None:
    """Why the egress filter would refuse `url`'s host, or None. A DNS name other than
    localhost is judged when it is dialled (every connection passes the filter then).
    Raises EgressConfigError for an allow-list entry that is not an address or range."""
    policy = EgressPolicy.from_allow_list(allow_private)
    host = urlsplit(url).hostname or ""
    try:
        literal = parse_host_literal(host)
    except AddressLiteralError as exc:
        return str(exc)
    name = host.lower().rstrip(".")
    if literal is not None:
        addresses: tuple[IPAddress, ...] = (literal,)
    elif name == "localhost" or name.endswith(".localhost"):
        addresses = _LOCALHOST  # it may resolve to either: both must be admitted
    else:
        return None
    for address in addresses:
        try:
            policy.check_address(address, host)
        except EgressBlocked as exc:
            return str(exc)
    return None
