"""Which IP addresses the gateway may connect to: the blocked ranges, and host literals parsed as
the addresses they are (decimal, octal, hex and short IPv4 forms; IPv6 with zone ids).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class AddressLiteralError(ValueError):
    """A host that looks like a numeric address but is not a valid one; never resolved by DNS."""


@dataclass(frozen=True, slots=True)
class BlockedRange:
    network: IPNetwork
    reason: str


def _ranges(*rows: tuple[str, str]) -> tuple[BlockedRange, ...]:
    return tuple(BlockedRange(ipaddress.ip_network(net), reason) for net, reason in rows)


# Checked in order; the first match names the reason. Anything not matched here but not globally
# routable (ipaddress.is_global) is blocked as "non_global", so a range missed here fails closed.
BLOCKED_V4 = _ranges(
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("169.254.0.0/16", "link_local"),
    ("100.64.0.0/10", "cgnat"),
    ("192.0.0.0/24", "ietf_protocol"),
    ("192.0.2.0/24", "documentation"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("198.18.0.0/15", "benchmarking"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)

BLOCKED_V6 = _ranges(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "ipv4_mapped"),
    ("::ffff:0:0:0/96", "ipv4_translated"),
    ("::/96", "ipv4_compatible"),
    ("64:ff9b::/96", "nat64"),
    ("64:ff9b:1::/48", "nat64"),
    ("2002::/16", "6to4"),
    ("2001::/32", "teredo"),
    ("100::/64", "discard"),
    ("2001:db8::/32", "documentation"),
    ("fe80::/10", "link_local"),
    ("fec0::/10", "site_local"),
    ("fc00::/7", "unique_local"),
    ("ff00::/8", "multicast"),
)

# A host made only of these characters, with a digit, is an address literal, never a DNS name.
_NUMERIC_V4 = re.compile(r"^[0-9][0-9a-fA-FxX.]*$")
_PART = re.compile(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$")


def parse_ipv4_literal(text: str) -> ipaddress.IPv4Address:
    """Parse IPv4 the way inet_aton(3) does: 1-4 parts, each decimal, 0-octal or 0x-hex;
    the last part fills the remaining bytes (so `2130706433`, `0x7f.1`, `0177.0.0.1` are 127.0.0.1).
    """
    parts = text.split(".")
    if text.endswith(".") and len(parts) > 1:
        parts = parts[:-1]  # one trailing dot is the DNS root, not another part
    if not 1 <= len(parts) <= 4:
        raise AddressLiteralError(f"{text!r} has {len(parts)} parts; an IPv4 address has 1 to 4")
    values = []
    for part in parts:
        if not _PART.match(part):
            raise AddressLiteralError(f"{text!r} is not a valid IPv4 address (part {part!r})")
        if part[:2] in ("0x", "0X"):
            values.append(int(part[2:], 16))
        elif part.startswith("0"):
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 0xFF for v in head):
        raise AddressLiteralError(f"{text!r} is not a valid IPv4 address (a part exceeds 255)")
    if last >= 1 << (8 * (4 - len(head))):
        raise AddressLiteralError(f"{text!r} is not a valid IPv4 address (last part too large)")
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def parse_host_literal(host: str) -> IPAddress | None:
    """The address a host string denotes if it is a literal; None if it is a DNS name.

    Raises AddressLiteralError for something numeric that is not a valid address, so that it is
    refused rather than handed to a resolver with its own, different parsing rules.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            raise AddressLiteralError(f"{host!r} is not a valid IPv6 address") from None
    if _NUMERIC_V4.match(text) and not _is_dns_label_name(text):
        return parse_ipv4_literal(text)
    return None


def _is_dns_label_name(text: str) -> bool:
    """Hex-looking names such as `cafe.deadbeef` or `0a.example` are names, not numbers:
    a part is numeric only if it is decimal or starts with 0x/0.
    """
    stripped = text[:-1] if text.endswith(".") else text
    return any(
        part and not (part.isdigit() or part[:2] in ("0x", "0X")) for part in stripped.split(".")
    )


def normalise(address: IPAddress) -> IPAddress:
    """Drop an IPv6 zone id so that range checks and allow-list matches see the bare address."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return ipaddress.IPv6Address(address.compressed.split("%", 1)[0])
    return address


def blocked_reason(address: IPAddress) -> str | None:
    """Why connecting to this address is refused by default, or None if it is public."""
    address = normalise(address)
    table = BLOCKED_V4 if isinstance(address, ipaddress.IPv4Address) else BLOCKED_V6
    for row in table:
        if address in row.network:
            return row.reason
    if not address.is_global:
        return "non_global"
    return None
