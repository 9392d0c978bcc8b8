"""The egress decision for one host: resolve once, check every address, keep the checked ones.

Pure policy plus a pluggable resolver; the httpx transport (`client.py`) and the aiohttp session
(`session.py`) connect only to its answer.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from mcpward.egress.addresses import (
    AddressLiteralError,
    IPAddress,
    IPNetwork,
    blocked_reason,
    normalise,
    parse_host_literal,
)

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]


class EgressBlocked(Exception):
    """A connection the egress filter refused. Nothing was sent; no socket was opened."""

    def __init__(self, host: str, reason: str, address: str | None = None) -> None:
        where = f"{host} ({address})" if address and address != host else host
        super().__init__(f"egress to {where} refused: {reason}")
        self.host = host
        self.reason = reason
        self.address = address


class EgressConfigError(ValueError):
    """An allow-list entry that is not an address or CIDR range."""


async def system_resolver(host: str, port: int) -> list[str]:
    """getaddrinfo through the event loop; one call per connection attempt."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        text = str(sockaddr[0])
        if text not in seen:
            seen.append(text)
    return seen


def parse_allow_list(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """Addresses or CIDR ranges an operator admits although they are private."""
    networks: list[IPNetwork] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise EgressConfigError(
                f"allow_private entry {entry!r} is not an IP address or CIDR range "
                "(e.g. 127.0.0.1, 10.2.0.0/16, ::1); host names are not accepted"
            ) from None
    return tuple(networks)


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Blocks private, loopback, metadata and other non-public addresses unless allow-listed."""

    allow: tuple[IPNetwork, ...] = ()
    resolver: Resolver = system_resolver

    @classmethod
    def from_allow_list(
        cls, entries: Iterable[str] = (), resolver: Resolver | None = None
    ) -> EgressPolicy:
        return cls(parse_allow_list(entries), resolver or system_resolver)

    def allowed(self, address: IPAddress) -> bool:
        address = normalise(address)
        candidates: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
        for net in self.allow:
            if any(c.version == net.version and c in net for c in candidates):
                return True
        return False

    def check_address(self, address: IPAddress, host: str | None = None) -> None:
        """Raise EgressBlocked unless this address may be connected to."""
        if self.allowed(address):
            return
        reason = blocked_reason(address)
        if reason is not None:
            raise EgressBlocked(host or str(address), reason, str(normalise(address)))

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        """The checked addresses to connect to, in resolver order. Resolves at most once.

        Every resolved address must pass: one private answer among public ones refuses the host,
        so a resolver cannot steer a later connection attempt into the private network.
        """
        try:
            literal = parse_host_literal(host)
        except AddressLiteralError as exc:
            raise EgressBlocked(host, f"invalid_address_literal: {exc}") from None
        if literal is not None:
            self.check_address(literal, host)
            return [normalise(literal)]
        if not host or host.startswith(".") or ".." in host:
            raise EgressBlocked(host, "invalid_host_name")
        answers = await self.resolver(host, port)  # OSError (no such name) propagates as-is
        if not answers:
            raise OSError(f"{host} resolved to no addresses")
        addresses: list[IPAddress] = []
        for text in answers:
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                raise EgressBlocked(host, f"resolver returned a non-address {text!r}") from None
            self.check_address(address, host)
            addresses.append(normalise(address))
        return addresses
