"""Gateway replicas on one PostgreSQL database for the fleet tests: each one a real `mcpward run`
subprocess (stdio front) driven with raw JSON-RPC, 16 calls in flight, every answer counted; and
what the stdio and HTTP fleet tests share (the ledger's receipts, `ledger verify`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpward.protocol.canonical import canonical_sha256
from mcpward.store.factory import StoreContext
from mcpward.store.postgres.ledger import open_postgres_snapshot
from tests.store.pg import DSN_ENV
from tests.support.gateway import demo_upstream, gateway_argv, tool_filter_guard
from tests.support.gateway import write_gateway_config as write_config

IN_FLIGHT = 16


def fleet_config(directory: Path, keys: Path, **evidence: Any) -> Path:
    """A replica's config: its own state dir, the fleet's keys and database (DSN from env)."""
    return write_config(
        directory,
        [demo_upstream()],
        guards=[tool_filter_guard("delete_*")],
        gateway={"relist_interval_s": 0},
        extra={
            "evidence": {"checkpoint_every_entries": 100, **evidence},
            "store": {"kind": "postgres", "dsn": {"env": DSN_ENV}, "pool": {"min": 1, "max": 4}},
            "keys": {"dir": str(keys)},
        },
    )


def message_of(name: str, i: int) -> str:
    return f"{name} call {i}"


def input_hash(name: str, i: int) -> str:
    return canonical_sha256({"message": message_of(name, i)})


@dataclass
class Replica:
    """One running replica and what its client saw."""

    name: str
    proc: asyncio.subprocess.Process
    answered: list[int] = field(default_factory=list)  # calls answered with a result
    errors: list[dict[str, Any]] = field(default_factory=list)  # calls answered with an error
    sent: int = 0

    @classmethod
    async def start(cls, name: str, config: Path, dsn: str) -> Replica:
        proc = await asyncio.create_subprocess_exec(
            *gateway_argv(config),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", DSN_ENV: dsn},
        )
        replica = cls(name, proc)
        await replica.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": f"fleet-{name}", "version": "1"},
                },
            }
        )
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert orjson.loads(line)["id"] == "init", line
        await replica.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return replica

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(message) + b"\n")
        await self.proc.stdin.drain()

    async def call(self) -> None:
        arguments = {"message": message_of(self.name, self.sent)}
        params = {"name": "echo", "arguments": arguments}
        await self.send(
            {"jsonrpc": "2.0", "id": self.sent, "method": "tools/call", "params": params}
        )
        self.sent += 1

    def take(self, raw: bytes) -> bool:
        """Count one line of output; True if it answered a call."""
        with contextlib.suppress(orjson.JSONDecodeError):
            message = orjson.loads(raw)
            if isinstance(message, dict) and isinstance(message.get("id"), int):
                if "result" in message and not message["result"].get("isError"):
                    self.answered.append(message["id"])
                else:
                    self.errors.append(message.get("error") or message["result"])
                return True
        return False

    async def load(self, answers: int, *, refill: bool = True) -> None:
        """Keep IN_FLIGHT calls going until `answers` more answers (results or errors) came."""
        assert self.proc.stdout is not None
        while self.sent - len(self.answered) - len(self.errors) < IN_FLIGHT:
            await self.call()
        target = len(self.answered) + len(self.errors) + answers
        while len(self.answered) + len(self.errors) < target:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            assert line, f"replica {self.name} closed its output"
            if self.take(line) and refill:
                await self.call()

    async def drain(self) -> None:
        """Wait for every call in flight to be answered."""
        outstanding = self.sent - len(self.answered) - len(self.errors)
        if outstanding:
            await self.load(outstanding, refill=False)

    async def stop(self) -> None:
        """A clean stop: end of input, the gateway drains, signs a checkpoint and exits."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.stdout is not None
        rest = await asyncio.wait_for(self.proc.stdout.read(), 60)
        for raw in rest.splitlines():
            self.take(raw)
        await asyncio.wait_for(self.proc.wait(), 60)

    async def kill9(self) -> None:
        """SIGKILL mid-load; answers already on the pipe were released before it died."""
        upstreams = children(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.stdout is not None
        rest = await asyncio.wait_for(self.proc.stdout.read(), 60)
        for raw in rest.splitlines():
            self.take(raw)
        await self.proc.wait()
        for pid in upstreams:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    async def close(self) -> None:
        if self.proc.returncode is None:
            upstreams = children(self.proc.pid)
            self.proc.kill()
            await self.proc.wait()
            for pid in upstreams:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def own_cluster_dir() -> Path:
    """A directory for a cluster of the test's own (one it may stop), outside pytest's basetemp:
    every pytest run resets that tree to 0700, which would lock the `postgres` user out."""
    return Path(tempfile.mkdtemp(prefix="mcpward-pg-own-"))


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found += [int(p) for p in handle.read().split()]
    return found


async def mcpward(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The real CLI in a subprocess: exit code and output."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpward.cli.main",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def call_receipts(context: StoreContext) -> list[dict[str, Any]]:
    """The tools/call receipts in the fleet's ledger."""
    with open_postgres_snapshot(context.settings) as view:
        entries = [orjson.loads(e.body) for e in view.entries()]
    return [
        e["receipt"]
        for e in entries
        if e["kind"] == "receipt" and e["receipt"]["method"] == "tools/call"
    ]


async def verify_cli(config: Path, dsn: str) -> dict[str, Any]:
    """`mcpward ledger verify --json --config F`, which must exit 0."""
    code, out = await mcpward(
        "ledger", "verify", "--json", "--config", str(config), env={DSN_ENV: dsn}
    )
    assert code == 0, out
    report: dict[str, Any] = orjson.loads(out)
    return report
