"""Start `mcpward run` as a black box: write a config, build stdio parameters, open an SDK client.

Every gateway started here keeps its state and log inside the test's own directory.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support import paths

ClientMode = Literal["auto", "legacy", "2026-07-28"]
# The conftest fixtures `gateway_config` and `gateway_client` are factories of these types.
GatewayConfigFactory = Callable[..., Path]
GatewayClientFactory = Callable[..., AbstractAsyncContextManager[Client]]
GATEWAY_MODULE = ["-m", "mcpward.cli.main"]


def demo_upstream(upstream_id: str = "demo", *, control: Path | None = None) -> dict[str, Any]:
    """The bundled demo server; `control` is its rug-pull control file (see mcpward.demo.server)."""
    args = ["-m", "mcpward.demo.server"]
    if control is not None:
        args += ["--control", str(control)]
    return {"id": upstream_id, "kind": "stdio", "command": sys.executable, "args": args}


def time_upstream(upstream_id: str = "time") -> dict[str, Any]:
    """mcp-server-time from PyPI (dual-era, built on mcp 2.x), pinned to UTC for stable output."""
    command = str(paths.venv_script("mcp-server-time"))
    return {
        "id": upstream_id,
        "kind": "stdio",
        "command": command,
        "args": ["--local-timezone", "UTC"],
    }


def everything_upstream(upstream_id: str = "everything") -> dict[str, Any]:
    """@modelcontextprotocol/server-everything over stdio (legacy era only)."""
    node, *args = paths.server_everything_command()
    return {"id": upstream_id, "kind": "stdio", "command": node, "args": args}


def write_gateway_config(
    directory: Path,
    upstreams: Sequence[Mapping[str, Any]],
    *,
    guards: Sequence[Mapping[str, Any]] | None = None,
    gateway: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    name: str = "mcpward.yaml",
) -> Path:
    """Write a gateway config into `directory` and return its path.

    `guards=None` leaves the key out (the built-in defaults apply); a list replaces the defaults
    (`replace_defaults: true`), so `[]` means no guards. State
    and the log file go to `directory/state` and `directory/gateway.log`.
    """
    directory.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "version": 1,
        "upstreams": [dict(u) for u in upstreams],
        "state_dir": str(directory / "state"),
        "logging": {"level": "debug", "file": str(directory / "gateway.log")},
    }
    if gateway is not None:
        config["gateway"] = dict(gateway)
    if guards is not None:
        config["guards"] = {"replace_defaults": True, "list": [dict(g) for g in guards]}
    if extra:
        config.update(extra)
    path = directory / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def tool_filter_guard(*deny: str, upstream: str = "*", allow: Sequence[str] = ()) -> dict[str, Any]:
    """A tool_filter guard spec denying (and hiding) the given tool-name globs."""
    rule: dict[str, Any] = {"upstream": upstream, "deny": list(deny)}
    if allow:
        rule["allow"] = list(allow)
    return {
        "kind": "tool_filter",
        "priority": 10,
        "runs_on": ["tools_list", "tool_invoke"],
        "config": {"rules": [rule]},
    }


def gateway_argv(config: Path) -> list[str]:
    """The command line that runs the gateway on `config` (handy for subprocess-level tests)."""
    return [sys.executable, *GATEWAY_MODULE, "run", "--config", str(config)]


def quick_argv(command: Sequence[str], *, upstream_id: str | None = None) -> list[str]:
    """The quick form `mcpward run [--id NAME] -- COMMAND ARGS...` with the default guards."""
    id_args = ["--id", upstream_id] if upstream_id is not None else []
    return [sys.executable, *GATEWAY_MODULE, "run", *id_args, "--", *command]


def _params(argv: Sequence[str], env: Mapping[str, str] | None) -> StdioServerParameters:
    merged = {"PYTHONUNBUFFERED": "1", **(env or {})}
    return StdioServerParameters(command=argv[0], args=list(argv[1:]), env=merged)


def gateway_params(config: Path, *, env: Mapping[str, str] | None = None) -> StdioServerParameters:
    """SDK client parameters that start `mcpward run --config CONFIG` as the stdio server."""
    return _params(gateway_argv(config), env)


def quick_params(
    command: Sequence[str],
    *,
    state_dir: Path,
    upstream_id: str | None = None,
    env: Mapping[str, str] | None = None,
) -> StdioServerParameters:
    """SDK client parameters for the quick form; its state goes to `state_dir`, not the user's."""
    merged = {"MCPWARD_STATE_DIR": str(state_dir), **(env or {})}
    return _params(quick_argv(command, upstream_id=upstream_id), merged)


@asynccontextmanager
async def open_client(
    target: StdioServerParameters,
    *,
    mode: ClientMode = "auto",
    **client_kwargs: Any,
) -> AsyncIterator[Client]:
    """An SDK `Client` session on `target` (the gateway, or an upstream directly for baselines).

    The client-side response cache is off unless asked for: tests must see what the wire says.
    """
    client_kwargs.setdefault("cache", None)
    client_kwargs.setdefault("read_timeout_seconds", 30.0)
    async with Client(target, mode=mode, **client_kwargs) as client:
        yield client


async def wait_for_tool(client: Client, name: str, *, timeout: float = 15.0) -> None:
    """Wait until `tools/list` shows `name` (servers such as server-everything register some
    tools only after the handshake, announcing them with list_changed)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        names = {tool.name for tool in (await client.list_tools()).tools}
        if name in names:
            return
        if loop.time() >= deadline:
            raise AssertionError(f"tool {name!r} never appeared; listed: {sorted(names)}")
        await asyncio.sleep(0.1)
