"""/healthz and /readyz: answered without a token and whatever the Host, revealing one word."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpward.config.http_front import HttpFront
from mcpward.config.loader import parse_config
from mcpward.fronts.http.server import running_front
from mcpward.relay.gateway import Gateway
from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.paths import REPO_ROOT

ECHO = str(REPO_ROOT / "tests" / "fixtures" / "echo_upstream.py")
TOKEN = "alice-token-0123456789abcdef"
FRONT = {"tokens": [token_entry(TOKEN, "alice")]}


def upstream(command: str = sys.executable, warm_spares: int = 1) -> dict[str, Any]:
    return {
        "id": "echo-upstream-name",
        "command": command,
        "args": [ECHO],
        "processes": {"warm_spares": warm_spares},
        "restart": {"initial_backoff_s": 0.1},
    }


def probe_url(mcp_url: str, path: str) -> str:
    return mcp_url.rsplit("/", 1)[0] + path


async def get_until(http: httpx.AsyncClient, url: str, status: int) -> httpx.Response:
    for _ in range(400):
        response = await http.get(url)
        if response.status_code == status:
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"{url} never answered {status}")


@pytest.mark.asyncio
async def test_probes_answer_without_token_or_host_and_reveal_one_word(tmp_path: Path) -> None:
    async with (
        gateway_front([upstream()], tmp_path / "state", FRONT, guards=[]) as (_, url),
        httpx.AsyncClient(timeout=10, headers={"Host": "10.1.2.3:9999"}) as http,
    ):
        health = await http.get(probe_url(url, "/healthz"))
        assert (health.status_code, health.text) == (200, "ok")
        ready = await get_until(http, probe_url(url, "/readyz"), 200)
        assert ready.text == "ready"
        head = await http.head(probe_url(url, "/readyz"))
        assert head.status_code == 200
        post = await http.post(probe_url(url, "/healthz"), content=b"x")
        assert post.status_code == 405
        # the MCP endpoint itself still refuses that Host and a missing token
        assert (await http.post(url, json={})).status_code == 403


@pytest.mark.asyncio
async def test_not_ready_when_an_upstream_cannot_start(tmp_path: Path) -> None:
    broken = upstream(command=str(tmp_path / "no-such-server"))
    async with (
        gateway_front([broken], tmp_path / "state", FRONT, guards=[]) as (_, url),
        httpx.AsyncClient(timeout=10) as http,
    ):
        assert (await http.get(probe_url(url, "/healthz"))).text == "ok"
        ready = await get_until(http, probe_url(url, "/readyz"), 503)
        assert ready.text == "not ready: upstreams"  # no upstream name, path or error


@pytest.mark.asyncio
async def test_the_store_check_decides_and_its_words_are_closed(tmp_path: Path) -> None:
    said: list[Any] = [None]

    def store_check() -> str | None:
        if isinstance(said[0], Exception):
            raise said[0]
        return said[0]  # type: ignore[no-any-return]

    data = {
        "upstreams": [upstream(warm_spares=0)],
        "state_dir": str(tmp_path),
        "guards": {"replace_defaults": True, "list": []},
    }
    gateway = await Gateway.start(parse_config(data, "test"))
    gateway.store_check = store_check  # what the configured store supplies
    try:
        async with (
            running_front(gateway, HttpFront(port=0, **FRONT)) as url,
            httpx.AsyncClient(timeout=10) as http,
        ):
            ready_url = probe_url(url, "/readyz")
            assert (await http.get(ready_url)).text == "ready"
            said[0] = "migrations"
            response = await http.get(ready_url)
            assert (response.status_code, response.text) == (503, "not ready: migrations")
            said[0] = "password authentication failed for user x"
            assert (await http.get(ready_url)).text == "not ready: store"
            said[0] = OSError("db.internal:5432 refused")
            assert (await http.get(ready_url)).text == "not ready: store"
    finally:
        await gateway.close()
