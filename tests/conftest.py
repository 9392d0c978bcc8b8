"""Fixtures shared by every test area: Node/npm tool paths, demo control files, gateway configs.

Helpers behind them live in tests/support (paths, gateway, processes, raw).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.support import paths
from tests.support.gateway import (
    ClientMode,
    GatewayClientFactory,
    GatewayConfigFactory,
    gateway_params,
    open_client,
    write_gateway_config,
)


@pytest.fixture(autouse=True, scope="session")
def _isolated_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """No test writes to the developer's real mcpward state directory by accident."""
    state = tmp_path_factory.mktemp("mcpward-state")
    previous = os.environ.get("MCPWARD_STATE_DIR")
    os.environ["MCPWARD_STATE_DIR"] = str(state)
    yield state
    if previous is None:
        os.environ.pop("MCPWARD_STATE_DIR", None)
    else:
        os.environ["MCPWARD_STATE_DIR"] = previous


@pytest.fixture(scope="session")
def node22() -> Path:
    """Node 22 from .tools (fails with the install command if missing)."""
    return paths.node22()


@pytest.fixture(scope="session")
def server_everything() -> list[str]:
    """argv of @modelcontextprotocol/server-everything (stdio) from the local install."""
    return paths.server_everything_command()


@pytest.fixture(scope="session")
def inspector_cli() -> list[str]:
    """argv prefix of the MCP Inspector CLI (`... --cli`); append options and the target."""
    return paths.inspector_cli_command()


@pytest.fixture
def demo_control(tmp_path: Path) -> Path:
    """Where the demo server's rug-pull control file goes (not created: no drift until written)."""
    return tmp_path / "demo-control.json"


@pytest.fixture
def gateway_config(tmp_path: Path) -> GatewayConfigFactory:
    """Factory: `gateway_config(upstreams, guards=..., gateway=..., extra=...)` -> config path in
    this test's tmp dir (state and log file beside it)."""

    def make(
        upstreams: Sequence[Mapping[str, Any]],
        *,
        guards: Sequence[Mapping[str, Any]] | None = None,
        gateway: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
        name: str = "mcpward.yaml",
    ) -> Path:
        return write_gateway_config(
            tmp_path, upstreams, guards=guards, gateway=gateway, extra=extra, name=name
        )

    return make


@pytest.fixture
def gateway_client(gateway_config: GatewayConfigFactory) -> GatewayClientFactory:
    """Factory: `async with gateway_client(upstreams, mode=..., guards=..., **client_kwargs) as c`
    writes a config, starts `mcpward run --config` and yields an SDK client connected to it."""

    @asynccontextmanager
    async def start(
        upstreams: Sequence[Mapping[str, Any]],
        *,
        mode: ClientMode = "auto",
        guards: Sequence[Mapping[str, Any]] | None = None,
        gateway: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> AsyncIterator[Client]:
        config = gateway_config(upstreams, guards=guards, gateway=gateway, extra=extra)
        async with open_client(gateway_params(config), mode=mode, **client_kwargs) as client:
            yield client

    return start


@pytest.fixture(params=["legacy", "2026-07-28"])
def client_mode(request: pytest.FixtureRequest) -> ClientMode:
    """Both protocol eras, for upstreams that speak both."""
    mode: ClientMode = request.param
    return mode
