"""The console under the HTTP front at /console: admin and client tokens never cross over."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from mcpward.config.http_front import HttpFront, HttpFrontRefused
from mcpward.fronts.http.console_mount import build_console
from mcpward.identity.tokens import hash_token
from tests.console.state import ADMIN_TOKEN, CLIENT_TOKEN, make_state
from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.paths import REPO_ROOT

ECHO = [
    {
        "id": "echo",
        "command": sys.executable,
        "args": [str(REPO_ROOT / "tests/fixtures/echo_upstream.py")],
    }
]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _token_file(tmp_path: Path) -> Path:
    path = tmp_path / "admin.token"
    path.write_text(ADMIN_TOKEN + "\n", encoding="utf-8")
    return path


async def test_console_is_served_at_console_and_tokens_do_not_cross(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_state(state)
    front = {
        "tokens": [token_entry(CLIENT_TOKEN, "alice")],
        "admin_token": {"file": str(_token_file(tmp_path))},
    }
    async with gateway_front(ECHO, state, front, guards=[]) as (_, url):
        base = url.rsplit("/mcp", 1)[0]
        admin = {"authorization": f"Bearer {ADMIN_TOKEN}"}
        client = {"authorization": f"Bearer {CLIENT_TOKEN}"}
        async with httpx.AsyncClient() as http:
            page = await http.get(f"{base}/console/holds", headers=admin)
            assert page.status_code == 200 and 'action="/console/holds/review"' in page.text
            assert page.headers["x-frame-options"] == "DENY"
            assert (await http.get(f"{base}/console/holds", headers=client)).status_code == 401
            assert (await http.get(f"{base}/console/static/console.css")).status_code == 200
            refused = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **admin})
            assert refused.status_code == 401
            accepted = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **client})
            assert accepted.status_code == 200
            rebinding = await http.get(
                f"{base}/console/holds", headers={**admin, "host": "evil.example"}
            )
            assert rebinding.status_code == 403


async def test_an_admin_token_equal_to_a_client_token_is_refused(tmp_path: Path) -> None:
    front = HttpFront(
        tokens=[token_entry(ADMIN_TOKEN, "alice")], admin_token={"file": str(_token_file(tmp_path))}
    )
    with pytest.raises(HttpFrontRefused, match="also a client token"):
        build_console(front, tmp_path, None)
    assert hash_token(ADMIN_TOKEN) == front.tokens[0].token_sha256


async def test_without_an_admin_token_there_is_no_console(tmp_path: Path) -> None:
    front = {"tokens": [token_entry(CLIENT_TOKEN, "alice")]}
    async with gateway_front(ECHO, tmp_path / "state", front, guards=[]) as (_, url):
        base = url.rsplit("/mcp", 1)[0]
        async with httpx.AsyncClient() as http:
            response = await http.get(
                f"{base}/console/holds", headers={"authorization": f"Bearer {ADMIN_TOKEN}"}
            )
            assert response.status_code == 404
