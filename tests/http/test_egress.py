"""Egress filter: a table of addresses and spellings, DNS pinning, allow-lists and redirects."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import aiohttp
import httpcore
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.routing import Route

from mcpward.egress.addresses import AddressLiteralError, parse_host_literal, parse_ipv4_literal
from mcpward.egress.client import egress_client
from mcpward.egress.policy import EgressBlocked, EgressConfigError, EgressPolicy
from mcpward.egress.session import egress_session
from tests.http.http_asgi_server import serve_asgi


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """Stands in for the network where a real connection must not be made (public addresses):
    records every connect attempt and refuses it."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append((host, port))
        raise httpcore.ConnectError("recorded, not connected")


class RecordingSockets:
    """The same stand-in for aiohttp sessions: a socket factory that records and refuses."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, int]] = []

    def __call__(self, addr_info: Any) -> socket.socket:
        self.attempts.append((str(addr_info[4][0]), int(addr_info[4][1])))
        raise OSError("recorded, not connected")


def fixed_resolver(table: Mapping[str, Sequence[str]]) -> Any:
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(table[host])

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


DNS = {
    "public.example": ["93.184.215.14"],
    "public6.example": ["2606:4700:4700::1111"],
    "metadata.example": ["169.254.169.254"],
    "mixed.example": ["93.184.215.14", "10.0.0.7"],
    "mapped.example": ["::ffff:10.0.0.1"],
    "internal.example": ["192.168.1.20"],
}

# (host as written in the URL, expected: None = allowed, else the reason in the refusal)
EGRESS_TABLE: list[tuple[str, str | None]] = [
    ("127.0.0.1", "loopback"),
    ("127.1", "loopback"),
    ("2130706433", "loopback"),
    ("0x7f000001", "loopback"),
    ("0x7f.1", "loopback"),
    ("0x7f.0.0.1", "loopback"),
    ("017700000001", "loopback"),
    ("127.0.0.1.", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("0", "unspecified"),
    ("10.0.0.1", "private"),
    ("012.0.0.1", "private"),
    ("172.16.5.4", "private"),
    ("172.31.255.255", "private"),
    ("192.168.0.1", "private"),
    ("3232235521", "private"),
    ("169.254.169.254", "link_local"),
    ("0xa9fea9fe", "link_local"),
    ("0251.0376.0251.0376", "link_local"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.254", "cgnat"),
    ("224.0.0.1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.10", "documentation"),
    ("[::1]", "loopback"),
    ("[::]", "unspecified"),
    ("[0:0:0:0:0:0:0:1]", "loopback"),
    ("[fe80::1]", "link_local"),
    ("[fe80::1%eth0]", "link_local"),
    ("[fd00::1]", "unique_local"),
    ("[fc00::1]", "unique_local"),
    ("[ff02::1]", "multicast"),
    ("[::ffff:127.0.0.1]", "ipv4_mapped"),
    ("[::ffff:7f00:1]", "ipv4_mapped"),
    ("[::ffff:169.254.169.254]", "ipv4_mapped"),
    ("[::127.0.0.1]", "ipv4_compatible"),
    ("[2002:7f00:1::]", "6to4"),
    ("[2002:a9fe:a9fe::1]", "6to4"),
    ("[64:ff9b::a9fe:a9fe]", "nat64"),
    ("[64:ff9b::7f00:1]", "nat64"),
    ("[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "teredo"),
    ("metadata.example", "link_local"),
    ("mixed.example", "private"),
    ("mapped.example", "ipv4_mapped"),
    ("internal.example", "private"),
    ("999.1.1.1", "invalid_address_literal"),
    ("08.0.0.1", "invalid_address_literal"),
    ("1.2.3.4.5", "invalid_address_literal"),
    ("[::ffff:zz]", "invalid_address_literal"),
    # allowed: public addresses and names resolving only to them
    ("93.184.215.14", None),
    ("1.1.1.1", None),
    ("16843009", None),
    ("[2606:4700:4700::1111]", None),
    ("public.example", None),
    ("public6.example", None),
]


async def attempt(url: str, policy: EgressPolicy) -> tuple[Exception | None, list[Any]]:
    """A GET through the httpx egress client (JWKS fetches, hook guards)."""
    backend = RecordingBackend()
    async with egress_client(policy, inner_backend=backend, timeout=5) as client:
        try:
            await client.get(url)
        except (EgressBlocked, httpx.HTTPError, httpx.InvalidURL) as exc:
            return exc, backend.attempts
    return None, backend.attempts


async def attempt_session(url: str, policy: EgressPolicy) -> tuple[Exception | None, list[Any]]:
    """The same GET through the aiohttp egress session (HTTP upstreams)."""
    sockets = RecordingSockets()
    async with egress_session(policy, connect_timeout=5, socket_factory=sockets) as session:
        try:
            async with session.get(url, allow_redirects=False):
                pass
        except (EgressBlocked, aiohttp.ClientError, ValueError) as exc:
            return exc, sockets.attempts
    return None, sockets.attempts


def refused_before_any_connection(exc: Exception | None) -> bool:
    # httpx and aiohttp refuse some spellings (4-part octal, non-canonical IPv4) as invalid URLs
    # before our policy sees them: equally safe, nothing is connected.
    return isinstance(exc, (EgressBlocked, httpx.InvalidURL, aiohttp.InvalidURL, ValueError))


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
@pytest.mark.parametrize(("host", "expected"), EGRESS_TABLE)
async def test_egress_table(host: str, expected: str | None, client: str) -> None:
    assert len(EGRESS_TABLE) >= 30
    policy = EgressPolicy(resolver=fixed_resolver(DNS))
    # 1) The policy's own verdict on the host as written.
    if expected is None:
        addresses = await policy.resolve(host, 443)
        assert addresses and all(a.is_global for a in addresses)
    else:
        with pytest.raises(EgressBlocked) as info:
            await policy.resolve(host, 443)
        assert info.value.reason.startswith(expected)
    # 2) A real client request to it: blocked means no connection attempt at all.
    request = attempt if client == "httpx" else attempt_session
    exc, attempts = await request(f"http://{host}:8080/x", policy)
    if expected is None and isinstance(exc, aiohttp.InvalidURL):
        # aiohttp refuses non-canonical IPv4 spellings outright, even of public addresses.
        assert attempts == [] and host.isdigit()
    elif expected is None:
        # The connection went to the checked address itself (refused only by the recorder).
        assert isinstance(exc, (httpx.ConnectError, aiohttp.ClientConnectorError)), exc
        assert len(attempts) == 1
        assert ipaddress.ip_address(attempts[0][0]).is_global
        assert attempts[0][1] == 8080
    else:
        assert attempts == []
        assert refused_before_any_connection(exc), exc
        if isinstance(exc, EgressBlocked):
            assert exc.reason.startswith(expected)


async def test_every_resolved_address_is_checked_and_the_checked_one_is_used() -> None:
    resolver = fixed_resolver({"multi.example": ["1.1.1.1", "8.8.8.8"]})
    policy = EgressPolicy(resolver=resolver)
    exc, attempts = await attempt("http://multi.example/", policy)
    assert isinstance(exc, httpx.ConnectError)
    # Both checked addresses were tried in order, nothing else, and the name was resolved once.
    assert attempts == [("1.1.1.1", 80), ("8.8.8.8", 80)]
    assert resolver.calls == ["multi.example"]


async def test_session_tries_only_checked_addresses_in_order() -> None:
    resolver = fixed_resolver({"multi.example": ["1.1.1.1", "8.8.8.8"]})
    exc, attempts = await attempt_session("http://multi.example/", EgressPolicy(resolver=resolver))
    assert isinstance(exc, aiohttp.ClientConnectorError)
    # aiohttp retries the remaining addresses after a failed round: the checked ones, only.
    assert list(dict.fromkeys(attempts)) == [("1.1.1.1", 80), ("8.8.8.8", 80)]
    assert resolver.calls == ["multi.example"]


async def test_unresolvable_name_is_a_connect_error_without_connection() -> None:
    policy = EgressPolicy(resolver=fixed_resolver({}))
    exc, attempts = await attempt("http://nowhere.invalid/", policy)
    assert isinstance(exc, httpx.ConnectError)
    assert attempts == []


async def test_unix_sockets_and_other_schemes_are_refused() -> None:
    async with egress_client(EgressPolicy()) as client:
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("file:///etc/passwd")


def _hello_app(redirect_to: str) -> Starlette:
    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    async def redirect(request: Request) -> RedirectResponse:
        return RedirectResponse(redirect_to, status_code=302)

    return Starlette(routes=[Route("/hello", hello), Route("/redirect", redirect)])


async def test_allow_list_admits_a_real_loopback_server_and_nothing_else() -> None:
    async with serve_asgi(_hello_app("http://169.254.169.254/latest/meta-data")) as port:
        async with egress_client(EgressPolicy()) as client:
            with pytest.raises(EgressBlocked):
                await client.get(f"http://127.0.0.1:{port}/hello")
        allowed = EgressPolicy.from_allow_list(["127.0.0.1/32"])
        async with egress_client(allowed) as client:
            response = await client.get(f"http://127.0.0.1:{port}/hello")
            assert response.text == "hello"
            # A redirect is returned as-is, never followed to the metadata address.
            response = await client.get(f"http://127.0.0.1:{port}/redirect")
            assert response.status_code == 302
            # The allow-list names 127.0.0.1 only: other loopback addresses stay blocked.
            with pytest.raises(EgressBlocked):
                await client.get(f"http://127.0.0.2:{port}/hello")
            with pytest.raises(EgressBlocked):
                await client.get(f"http://[::1]:{port}/hello")


async def test_dns_rebinding_public_then_private_is_pinned_per_connection() -> None:
    """A name that answers first with an admitted address and then with a private one: the
    connection goes to the address that was checked; the next connection is checked again."""
    answers = [["127.0.0.1"], ["10.0.0.1"]]
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    policy = EgressPolicy.from_allow_list(["127.0.0.1"], resolver=rebinding)
    async with serve_asgi(_hello_app("/hello")) as port:
        async with egress_client(policy) as client:
            response = await client.get(f"http://rebind.example:{port}/hello")
            assert response.text == "hello"
            assert calls == ["rebind.example"]  # resolved once; the socket went to 127.0.0.1
        async with egress_client(policy) as client:
            with pytest.raises(EgressBlocked) as info:
                await client.get(f"http://rebind.example:{port}/hello")
            assert info.value.reason == "private"
            assert calls == ["rebind.example", "rebind.example"]


async def test_session_allow_list_redirects_and_rebinding_against_a_real_server() -> None:
    answers = [["127.0.0.1"], ["10.0.0.1"]]
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    async with serve_asgi(_hello_app("http://169.254.169.254/latest/meta-data")) as port:
        async with egress_session(EgressPolicy()) as session:
            with pytest.raises(EgressBlocked):
                await session.get(f"http://127.0.0.1:{port}/hello")
        allowed = EgressPolicy.from_allow_list(["127.0.0.1/32"], resolver=rebinding)
        async with egress_session(allowed) as session:
            async with session.get(f"http://127.0.0.1:{port}/hello") as response:
                assert await response.text() == "hello"
            async with session.get(
                f"http://127.0.0.1:{port}/redirect", allow_redirects=False
            ) as response:
                assert response.status == 302
            for other in ("127.0.0.2", "[::1]"):
                with pytest.raises(EgressBlocked):
                    await session.get(f"http://{other}:{port}/hello")
            async with session.get(f"http://rebind.example:{port}/hello") as response:
                assert await response.text() == "hello"
        async with egress_session(allowed) as session:
            with pytest.raises(EgressBlocked) as info:
                await session.get(f"http://rebind.example:{port}/hello")
            assert info.value.reason == "private"
            assert calls == ["rebind.example", "rebind.example"]


def test_allow_list_entries_are_addresses_or_ranges() -> None:
    policy = EgressPolicy.from_allow_list(["10.1.0.0/16", "::1", "192.168.3.4"])
    assert policy.allowed(ipaddress.ip_address("10.1.2.3"))
    assert not policy.allowed(ipaddress.ip_address("10.2.0.1"))
    assert policy.allowed(ipaddress.ip_address("::1"))
    # an IPv4-mapped spelling of an allow-listed IPv4 address is the same address
    assert policy.allowed(ipaddress.ip_address("::ffff:192.168.3.4"))
    with pytest.raises(EgressConfigError, match="host names are not accepted"):
        EgressPolicy.from_allow_list(["internal.example"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("example.com", None),
        ("cafe.example", None),
        ("1a.example", None),
        ("0x7f.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("4294967295", "255.255.255.255"),
    ],
)
def test_host_literal_classification(text: str, expected: str | None) -> None:
    parsed = parse_host_literal(text)
    assert (str(parsed) if parsed is not None else None) == expected


def test_out_of_range_literals_are_refused_not_resolved() -> None:
    for text in ["4294967296", "1.16777216", "256.1.1.1", "0x", "1..1"]:
        with pytest.raises(AddressLiteralError):
            parse_host_literal(text)


_part = st.one_of(
    st.integers(0, 2**32).map(str),
    st.integers(0, 2**32).map(lambda v: f"0x{v:x}"),
    st.integers(0, 2**32).map(lambda v: f"0{v:o}"),
    st.integers(0, 255).map(str),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_part, min_size=1, max_size=4))
def test_ipv4_literals_parse_exactly_like_inet_aton(parts: list[str]) -> None:
    text = ".".join(parts)
    try:
        expected: str | None = socket.inet_ntoa(socket.inet_aton(text))
    except OSError:
        expected = None
    try:
        got: str | None = str(parse_ipv4_literal(text))
    except AddressLiteralError:
        got = None
    assert got == expected
