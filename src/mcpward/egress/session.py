"""aiohttp sessions whose every TCP connection passes the egress policy (the upstream hot path).

Two gates: the resolver is the policy (resolve once, check every address, hand back only checked
ones), and the socket factory checks the concrete address of every socket before it is created,
which also covers IP-literal hosts (aiohttp does not ask a resolver for those).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from mcpward.egress.policy import EgressPolicy

AddrInfo = tuple[int, int, int, str, tuple[Any, ...]]
SocketFactory = Callable[[AddrInfo], socket.socket]


def plain_socket(addr_info: AddrInfo) -> socket.socket:
    family, type_, proto, _, _ = addr_info
    return socket.socket(family=family, type=type_, proto=proto)


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver seam, answered by the egress policy."""

    def __init__(self, policy: EgressPolicy) -> None:
        self.policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self.policy.resolve(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


def guarded_socket_factory(policy: EgressPolicy, inner: SocketFactory) -> SocketFactory:
    """Check the address a socket is about to be connected to, then make the socket."""

    def make(addr_info: AddrInfo) -> socket.socket:
        address = ipaddress.ip_address(str(addr_info[4][0]).split("%", 1)[0])
        policy.check_address(address)  # EgressBlocked is not an OSError: aiohttp re-raises it
        return inner(addr_info)

    return make


def egress_session(
    policy: EgressPolicy | None = None,
    *,
    connect_timeout: float = 30.0,
    limit: int = 64,
    headers: dict[str, str] | None = None,
    socket_factory: SocketFactory = plain_socket,
) -> aiohttp.ClientSession:
    """A ClientSession for upstream traffic. Callers pass `allow_redirects=False` per request
    (a redirect is an answer like any other); environment proxies are ignored; nothing is
    decompressed on our behalf beyond what the server was allowed to send (`identity`)."""
    policy = policy or EgressPolicy()
    connector = aiohttp.TCPConnector(
        resolver=GuardedResolver(policy),
        use_dns_cache=False,  # every new connection is resolved and checked again
        limit=limit,
        limit_per_host=limit,
        happy_eyeballs_delay=None,  # sequential attempts: a refusal is raised, not swallowed
        socket_factory=guarded_socket_factory(policy, socket_factory),
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout),
        headers={"Accept-Encoding": "identity", **(headers or {})},
        trust_env=False,
        auto_decompress=False,
    )
