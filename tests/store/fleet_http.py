"""Load on an HTTP replica: raw Streamable HTTP MCP sessions (initialize, initialized, then
tools/call POSTs), several calls in flight, every answer counted; and a /healthz latency probe."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpward.protocol.canonical import canonical_sha256
from tests.store.fleet import TOKEN, Replica

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
VERSION = "2025-11-25"


def arguments(memo: str) -> dict[str, Any]:
    return {"amount": 1, "memo": memo}


def input_hash(memo: str) -> str:
    return canonical_sha256(arguments(memo))


def messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer: one JSON body, or an SSE stream."""
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    # a slow answer switches to SSE, whose priming event carries an empty `data:` line
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(item) for item in data if item]


@dataclass
class HttpLoad:
    """`sessions` MCP sessions on one replica with `per_session` calls in flight on each."""

    replica: Replica
    sessions: int = 4
    per_session: int = 4
    answered: list[str] = field(default_factory=list)  # memos answered with a result
    refusals: list[str] = field(default_factory=list)  # "-32012", "401 <reason>", ...
    broken: int = 0  # calls whose connection broke (no answer at all)
    _sids: list[str] = field(default_factory=list)
    _next: int = 0
    _http: httpx.AsyncClient | None = None

    @property
    def done(self) -> int:
        return len(self.answered) + len(self.refusals) + self.broken

    async def open(self) -> None:
        limits = httpx.Limits(max_connections=self.sessions * self.per_session + 4)
        self._http = httpx.AsyncClient(timeout=30, limits=limits)
        for _ in range(self.sessions):
            self._sids.append(await self._initialize())

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def _initialize(self) -> str:
        assert self._http is not None
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": f"load-{self.replica.name}", "version": "1"},
            },
        }
        response = await self._http.post(self.replica.url, headers=HEADERS, json=init)
        assert response.status_code == 200, (response.status_code, response.text)
        sid = response.headers["mcp-session-id"]
        headers = {**HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": VERSION}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self._http.post(self.replica.url, headers=headers, json=note)).is_success
        return sid

    async def call(self, sid: str) -> None:
        """One tools/call; counted as answered, refused or broken."""
        assert self._http is not None
        memo = f"{self.replica.name}-{self._next}"
        self._next += 1
        body = {
            "jsonrpc": "2.0",
            "id": self._next,
            "method": "tools/call",
            "params": {"name": "transfer", "arguments": arguments(memo)},
        }
        headers = {**HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": VERSION}
        try:
            response = await self._http.post(self.replica.url, headers=headers, json=body)
        except httpx.TransportError:
            self.broken += 1
            return
        if response.status_code != 200:
            challenge = response.headers.get("www-authenticate", "")
            self.refusals.append(f"{response.status_code} {challenge} {response.text[:200]}")
            return
        replies = [m for m in messages(response.text) if "id" in m]
        reply = replies[-1] if replies else {}
        result = reply.get("result")
        if isinstance(result, dict) and not result.get("isError"):
            self.answered.append(memo)
        else:
            error = reply.get("error") or {}
            self.refusals.append(str(error.get("code", "isError")))

    async def run(self, answers: int, *, timeout: float = 60) -> None:
        """Keep every session busy until `answers` more calls were answered (any way), or
        until a call's connection breaks (the replica is gone)."""
        target = self.done + answers
        deadline = time.monotonic() + timeout

        async def worker(sid: str) -> None:
            broken = self.broken
            while self.done < target and self.broken == broken:  # a break: the replica died
                assert time.monotonic() < deadline, f"{self.replica.name}: load timed out"
                await self.call(sid)

        await asyncio.gather(*(worker(s) for s in self._sids for _ in range(self.per_session)))


async def health_latencies(
    url: str, stop: asyncio.Event, every: float = 0.02
) -> list[tuple[float, float]]:
    """GET /healthz again and again until `stop`: (monotonic start, latency in seconds) of each
    (a request of another session, served by the same event loop as the calls)."""
    latencies: list[tuple[float, float]] = []
    async with httpx.AsyncClient(timeout=30) as http:
        while not stop.is_set():
            started = time.monotonic()
            response = await http.get(url)
            latencies.append((started, time.monotonic() - started))
            assert response.status_code == 200
            await asyncio.sleep(every)
    return latencies
