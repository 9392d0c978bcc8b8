"""A blocking HTTP POST through the egress filter, for a sender that runs on a thread of its own
(the OTLP span exporter's worker): the same guarded connections as every other outgoing request,
driven by a private event loop, one request at a time."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping

import httpx

from mcpward.egress.client import egress_client
from mcpward.egress.policy import EgressPolicy

_LIMITS = httpx.Limits(max_connections=1, max_keepalive_connections=1)


class EgressPoster:
    """POSTs bodies from any thread; connections are checked by `policy` when they are dialled.

    Raises EgressBlocked when the filter refuses the host, httpx.HTTPError when the request
    fails; otherwise returns the response's status (the body is read and dropped)."""

    def __init__(self, policy: EgressPolicy, timeout: float = 10.0) -> None:
        self._policy = policy
        self._timeout = timeout
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None
        self._closed = False

    def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        with self._lock:
            if self._closed:
                raise httpx.RequestError("the poster is closed")
            if self._loop is None or self._client is None:
                self._loop = asyncio.new_event_loop()
                self._client = egress_client(self._policy, timeout=self._timeout, limits=_LIMITS)
            request = self._client.post(url, content=body, headers=dict(headers))
            response = self._loop.run_until_complete(request)
            return response.status_code

    def close(self) -> None:
        with self._lock:
            self._closed = True
            loop, client = self._loop, self._client
            self._loop = self._client = None
            if loop is not None and client is not None:
                try:
                    loop.run_until_complete(client.aclose())
                finally:
                    loop.close()
