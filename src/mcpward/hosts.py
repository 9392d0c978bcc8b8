"""Host names and addresses: the one loopback test used by the fronts, listeners, hooks and the
consult, and the one check of a service URL they are configured with. Below every layer, like
`secret_refs`, so any of them may call it."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback_host(host: str) -> bool:
    """`localhost` (any case) or a loopback address, bracketed IPv6 included."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def checked_service_url(value: str, credentials_advice: str) -> str:
    """`value` if it is an http(s) URL with a host and no user or password in it, else a
    ValueError; `credentials_advice` says where the credential goes instead."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ValueError(f"url must not carry credentials; {credentials_advice}")
    return value
