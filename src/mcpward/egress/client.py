"""httpx clients whose every TCP connection goes through the egress policy.

The host is resolved once per connection, every address is checked, and the socket is opened to
the checked address itself, so DNS cannot answer differently between the check and the connect.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import httpcore
import httpx
from httpcore import AsyncNetworkBackend, AsyncNetworkStream
from httpcore._backends.auto import AutoBackend

from mcpward.egress.policy import EgressPolicy

SocketOption = Any
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)


class GuardedNetworkBackend(AsyncNetworkBackend):
    """An httpcore backend that refuses blocked hosts and connects only to checked addresses."""

    def __init__(self, policy: EgressPolicy, inner: AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self._inner = inner or AutoBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await self.policy.resolve(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> AsyncNetworkStream:
        raise httpcore.ConnectError("the egress filter does not permit unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class EgressTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport with the connection pool swapped for one on the guarded backend."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        verify: ssl.SSLContext | str | bool = True,
        limits: httpx.Limits = DEFAULT_LIMITS,
        http2: bool = False,
        inner_backend: AsyncNetworkBackend | None = None,
    ) -> None:
        super().__init__(verify=verify, limits=limits, http2=http2, trust_env=True)
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=True)
        # Replacing the pool is the one seam httpx offers for the network layer; proxies are
        # never used (a proxy would resolve names itself, after our check).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=GuardedNetworkBackend(policy, inner_backend),
        )
        self.policy = policy


def egress_client(
    policy: EgressPolicy | None = None,
    *,
    timeout: httpx.Timeout | float = 30.0,
    headers: dict[str, str] | None = None,
    verify: ssl.SSLContext | str | bool = True,
    limits: httpx.Limits | None = None,
    inner_backend: AsyncNetworkBackend | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient for connections the gateway itself opens (upstreams, JWKS, hook guards).

    Redirects are not followed (a redirect is an answer like any other; its target would need its
    own check), environment proxies are ignored, and only http/https URLs can be requested.
    """
    transport = EgressTransport(
        policy or EgressPolicy(),
        verify=verify,
        limits=limits or DEFAULT_LIMITS,
        inner_backend=inner_backend,
    )
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        headers=headers,
        follow_redirects=False,
        trust_env=False,
    )


def egress_http_client(allow_private: Sequence[str], timeout: float) -> httpx.AsyncClient:
    """`pipeline.services.HttpClientFactory` for guards: an egress-filtered httpx client whose
    policy allows only these private addresses/CIDRs."""
    return egress_client(EgressPolicy.from_allow_list(allow_private), timeout=timeout)
