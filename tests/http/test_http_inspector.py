"""The MCP Inspector CLI (v2) works over HTTP through the gateway: list, call, a consent denial,
and a missing credential, in both protocol eras."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.http.gateway_harness import fixture_upstream, gateway_front, token_entry
from tests.support import paths

FULL = "inspector-full-token-0123456789"
READ_ONLY = "inspector-ro-token-0123456789a"
ACCESS = [{"kind": "access", "runs_on": ["tools_list", "tool_invoke"]}]
on_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    directory = tmp_path_factory.mktemp("inspector")
    async with fixture_upstream() as upstream_url:
        upstream = {"id": "fx", "url": upstream_url, "allow_private": ["127.0.0.1"]}
        tokens = [token_entry(FULL, "full"), token_entry(READ_ONLY, "ro", "read_only")]
        async with gateway_front([upstream], directory, {"tokens": tokens}, guards=ACCESS) as (
            _,
            front_url,
        ):
            yield front_url


async def inspector(url: str, token: str | None, era: str, *args: str) -> tuple[int, str, str]:
    command = [*paths.inspector_cli_command(), url, "--protocol-era", era, "--format", "json", "-q"]
    command += ["--connect-timeout", "60000"]  # its 15 s default is short on a loaded machine
    if token is not None:
        command += ["--header", f"Authorization: Bearer {token}"]
    proc = await asyncio.create_subprocess_exec(
        *command, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 180)  # a hang guard
    return proc.returncode or 0, out.decode(), err.decode()


def _json(text: str) -> Any:
    return json.loads(text.strip().splitlines()[-1])


@on_module_loop
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_inspector_lists_and_calls(url: str, era: str) -> None:
    code, out, err = await inspector(url, FULL, era, "--method", "tools/list")
    assert code == 0, err
    names = {tool["name"] for tool in _json(out)["result"]["tools"]}
    assert "test_simple_text" in names and "test_error_handling" in names
    code, out, err = await inspector(
        url, FULL, era, "--method", "tools/call", "--tool-name", "test_simple_text"
    )
    assert code == 0, err
    assert "This is a simple text response for testing." in out


@on_module_loop
async def test_inspector_sees_the_consent_ceiling(url: str) -> None:
    code, out, err = await inspector(url, READ_ONLY, "legacy", "--method", "tools/list")
    assert code == 0, err
    assert {tool["name"] for tool in _json(out)["result"]["tools"]} == {"test_simple_text"}
    # The hidden tool is not in tools/list, so the Inspector refuses it (exit 5: tool not found).
    code, _, err = await inspector(
        url, READ_ONLY, "legacy", "--method", "tools/call", "--tool-name", "test_error_handling"
    )
    assert code == 5, err


@on_module_loop
async def test_inspector_without_a_credential_is_told_to_authenticate(url: str) -> None:
    code, _, err = await inspector(url, None, "legacy", "--method", "tools/list")
    assert code == 3, err  # the Inspector's "auth required" exit code
