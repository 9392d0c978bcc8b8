"""What the library tests share: SDK sessions over stdio, the drifting fixture server's control
file and call log, the ledger's receipts, and the mcpward CLI run in-process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.evidence.settings import EvidencePaths
from mcpward.store.ledger_sqlite import read_snapshot
from tests.support import paths

DRIFT = Path(__file__).resolve().parents[1] / "fixtures" / "drift_server.py"


def time_server() -> StdioServerParameters:
    """mcp-server-time from PyPI (dual-era, built on mcp 2.x), pinned to UTC."""
    command = str(paths.venv_script("mcp-server-time"))
    return StdioServerParameters(command=command, args=["--local-timezone", "UTC"])


@asynccontextmanager
async def sdk_session(
    params: StdioServerParameters, message_handler: MessageHandlerFnT | None = None
) -> AsyncIterator[ClientSession]:
    """The SDK's real ClientSession over its stdio client, initialized (handshake era)."""
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=message_handler) as session,
    ):
        await session.initialize()
        yield session


class DriftServer:
    """tests/fixtures/drift_server.py: one tool `transfer`, prompt `greet`, resource
    `res://ledger`; the control file says which contract version it serves, the log records
    every call that reached it (with the version it served)."""

    def __init__(self, directory: Path, mode: str = "startup") -> None:
        self.control = directory / "control.json"
        self.log = directory / "calls.jsonl"
        self.events = directory / "events.jsonl"
        self.mode = mode
        self.serve(0)

    def serve(self, version: int, annotations: str = "readonly") -> None:
        staged = self.control.with_suffix(".tmp")
        staged.write_text(json.dumps({"version": version, "annotations": annotations}))
        os.replace(staged, self.control)  # atomic: a live server never reads half a file

    def params(self) -> StdioServerParameters:
        args = [str(DRIFT), "--control", str(self.control), "--log", str(self.log)]
        args += ["--events", str(self.events), "--mode", self.mode]
        return StdioServerParameters(command=sys.executable, args=args)

    def calls(self) -> list[tuple[str, str, int]]:
        """(method, name, version served) of every call that reached a server process."""
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        return [
            (r["method"], r["name"], r["version_served"]) for r in (json.loads(x) for x in lines)
        ]

    def pids(self) -> list[int]:
        lines = self.events.read_text().splitlines()
        return [r["pid"] for r in (json.loads(x) for x in lines) if r.get("event") == "start"]


def receipts(state: Path) -> list[dict[str, Any]]:
    with read_snapshot(EvidencePaths.resolve(state).ledger) as view:
        bodies = [json.loads(entry.body) for entry in view.entries()]
    return [body["receipt"] for body in bodies if body["kind"] == "receipt"]


def calls_in(state: Path) -> list[dict[str, Any]]:
    return [r for r in receipts(state) if r["method"] == "tools/call"]


def mcpward(*args: str) -> tuple[int, str]:
    """The mcpward CLI in this process: (exit code, output)."""
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.output
