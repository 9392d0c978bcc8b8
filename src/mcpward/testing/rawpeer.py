"""A bare JSON-RPC client over a subprocess's stdio, for tests and benchmarks.

It adds nothing of its own to what it measures, and it can send bytes that no SDK would.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class PeerGone(ConnectionError):
    """The child process closed its stdout (it exited) while a request waited for an answer."""


class RawPeer:
    """Talks newline-delimited JSON-RPC to a child process; collects notifications and requests."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.unsolicited: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.raw_lines: list[bytes] = []
        self.keep_raw = False
        self.closed = False  # its stdout reached EOF
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def spawn(
        cls, argv: list[str], env: dict[str, str] | None = None, stderr: int | None = None
    ) -> RawPeer:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL if stderr is None else stderr,
            env=env,
            limit=256 * 1024 * 1024,
        )
        return cls(proc)

    async def initialize(
        self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        reply = await self.call(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "rawpeer", "version": "1"},
            },
        )
        await self.notify("notifications/initialized")
        return reply

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            if self.keep_raw:
                self.raw_lines.append(line)
            msg = json.loads(line)
            if "method" in msg:
                await self.unsolicited.put(msg)
                continue
            fut = self.waiting.pop(msg.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            else:
                await self.unsolicited.put(msg)
        self.closed = True
        # The peer is gone: whoever still waits for an answer learns it now instead of hanging.
        waiting, self.waiting = self.waiting, {}
        for request_id, fut in waiting.items():
            if not fut.done():
                fut.set_exception(
                    PeerGone(f"the peer exited before answering request {request_id!r}")
                )

    def _future(self, request_id: Any) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self.closed:
            fut.set_exception(PeerGone(f"the peer has exited (request {request_id!r})"))
            return fut
        self.waiting[request_id] = fut
        return fut

    async def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def request(
        self, method: str, params: dict[str, Any] | None = None, request_id: Any = None
    ) -> dict[str, Any]:
        """Send a request; return the whole response message (result or error)."""
        if request_id is None:
            self.next_id += 1
            request_id = self.next_id
        fut = self._future(request_id)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send_bytes(json.dumps(msg).encode() + b"\n")
        return await fut

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; return its result, raising RuntimeError on an error response."""
        msg = await self.request(method, params)
        if "error" in msg:
            raise RuntimeError(msg["error"])
        return msg["result"]

    async def expect_reply(self, request_id: Any) -> dict[str, Any]:
        """Await the reply to a request id sent with send_bytes (or id None for errors)."""
        return await self._future(request_id)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self.send_bytes(json.dumps(msg).encode() + b"\n")

    async def close(self, timeout: float = 10.0) -> int | None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()
        return self.proc.returncode
