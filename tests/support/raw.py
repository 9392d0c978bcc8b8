"""A raw newline-delimited JSON-RPC session with a stdio process, for what the SDK client cannot
send (malformed frames, oversized lines) and for tests that need the process's pid.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Mapping, Sequence
from typing import Any

LINE_LIMIT = 64 * 1024 * 1024


class RawStdioSession:
    """One child process; `send` writes a frame, `receive` reads the next stdout line as JSON."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._next_id = 1

    @classmethod
    async def start(
        cls, argv: Sequence[str], *, env: Mapping[str, str] | None = None, stderr: Any = None
    ) -> RawStdioSession:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr if stderr is not None else asyncio.subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            limit=LINE_LIMIT,
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.send_bytes(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def receive(self, timeout: float = 15.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        if not line:
            raise EOFError(f"process {self.pid} closed its stdout")
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float = 15.0
    ) -> dict[str, Any]:
        """Send a request and return its response, skipping notifications and other traffic."""
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            reply = await self.receive(max(0.01, deadline - loop.time()))
            if reply.get("id") == request_id and "method" not in reply:
                return reply

    async def initialize(self, protocol_version: str = "2025-11-25") -> dict[str, Any]:
        """The handshake-era opening: initialize + notifications/initialized."""
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "mcpward-tests", "version": "0"},
            },
            timeout=60.0,  # the first answer waits for the process to start: slow under load
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    async def close(self, timeout: float = 10.0) -> int:
        """Close stdin and wait; escalate to SIGTERM, then SIGKILL. Returns the exit status."""
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and self.process.returncode is None:
                self.process.send_signal(sig)
            try:
                return await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                continue
        return await self.process.wait()
