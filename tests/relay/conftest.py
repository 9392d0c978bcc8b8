"""Gateways in front of the raw echo upstream, driven by a raw JSON-RPC peer."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpward.testing.rawpeer import RawPeer
from tests.support.gateway import gateway_argv, write_gateway_config

ECHO = str(Path(__file__).resolve().parents[1] / "fixtures" / "echo_upstream.py")


def echo_upstream(upstream_id: str, **env: str) -> dict[str, Any]:
    return {
        "id": upstream_id,
        "command": sys.executable,
        "args": [ECHO],
        "env": {"ECHO_NAME": upstream_id, **env},
        "restart": {"initial_backoff_s": 0.1},
    }


GatewayFactory = Callable[..., Any]


@pytest.fixture
def gateway(tmp_path: Path) -> GatewayFactory:
    """`async with gateway(upstreams, guards=[], gateway={...}) as peer:` an initialized RawPeer."""

    @asynccontextmanager
    async def start(
        upstreams: list[dict[str, Any]],
        guards: list[dict[str, Any]] | None = None,
        settings: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        initialize: bool = True,
    ) -> AsyncIterator[RawPeer]:
        config = write_gateway_config(
            tmp_path,
            upstreams,
            guards=guards if guards is not None else [],
            gateway={"relist_interval_s": 0, **(settings or {})},
        )
        peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
        try:
            if initialize:
                await peer.initialize(capabilities=capabilities)
            yield peer
        finally:
            await peer.close()

    return start
