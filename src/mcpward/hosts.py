"""Host names and addresses: the one loopback test used by the fronts, listeners, hooks and the
consult. Below every layer, like `secret_refs`, so any of them may call it."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    """`localhost` (any case) or a loopback address, bracketed IPv6 included."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
