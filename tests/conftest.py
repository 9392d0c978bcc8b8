"""Fixtures shared by every test area: Node/npm tool paths, demo control files, gateway configs.

Helpers behind them live in tests/support (paths, gateway, processes, raw).
"""

from __future__ import annotations

import os
import tempfile
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


@pytest.fixture(scope="session")
def postgres_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real PostgreSQL cluster for the whole run (tests/support/postgres.py); in CI its absence
    is a failure, elsewhere the tests that need it are skipped with the reason."""
    from tests.support.postgres import PostgresUnavailable, running_cluster

    base = Path(tempfile.mkdtemp(prefix="mcpward-pg-"))
    try:
        with running_cluster(base) as cluster:
            yield cluster
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


@pytest.fixture
def pg_dsn(postgres_cluster: Any, request: pytest.FixtureRequest) -> str:
    """The DSN of a fresh, empty database of the shared cluster, one per test."""
    import re
    import secrets as _secrets

    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40]
    return str(postgres_cluster.create_database(f"t_{stem}_{_secrets.token_hex(3)}"))
