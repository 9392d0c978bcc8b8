"""Helpers of the wiring tests: the fixture configs, a private state dir, the CLI in-process."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from mcpward.cli.main import build_app
from mcpward.wiring.clients import CLIENTS
from mcpward.wiring.document import read_document
from mcpward.wiring.entries import EntryKind

DATA = Path(__file__).resolve().parent / "data"

# client -> its fixture config (each in the shape the client documents)
FIXTURES = {
    "claude-desktop": "claude_desktop_config.json",
    "claude-code": "claude.json",
    "cursor": "cursor_mcp.json",
    "vscode": "vscode_mcp.json",
    "windsurf": "windsurf_mcp_config.json",
}
# secrets in the fixtures that must never be printed
SECRETS = (
    "ghp_R8x2mQ4vT7wK9pL3nB6cD1fG5hJ0sA2eY4uI",
    "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA",
    "Tr0ub4dor-3",
    "cursor-api-key-value-7Hq2",
    "python-api-key-value-9Xe4",
    "remote-api-key-value-3Kd8",
    "BSAw9Zq2Lm4Np6Rt8Vx0Yb2Dc4Fe6Gh",
)


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def mcpward(*args: str) -> Run:
    """The mcpward CLI in this process."""
    done = CliRunner().invoke(build_app(list(args)), list(args))
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return Run(done.exit_code, done.stdout, done.stderr)


def copy_fixture(name: str, directory: Path) -> Path:
    target = directory / name
    shutil.copyfile(DATA / name, target)
    return target


def kinds(client: str, path: Path) -> dict[str, EntryKind]:
    doc = read_document(path, CLIENTS[client])
    return {entry.name: entry.kind for entry in doc.entries}
