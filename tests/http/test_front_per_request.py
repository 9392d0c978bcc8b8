"""What the HTTP front does once per request instead of several times, and what it no longer
does per request at all: headers read in one pass, the Principal
of a static token reused while revocations are still asked every time, Mcp-Param-* checks only
for tools that declare them, and no disconnect watcher until a 2026-07-28 request is slow
(closing the stream still cancels it)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpward.fronts.http.app import HttpFrontApp
from mcpward.fronts.http.headers import RequestHeaders, read_headers
from mcpward.fronts.http.mailbox import Mailbox
from mcpward.fronts.http.modern import ParamHeaderCheck
from mcpward.fronts.http.responses import Receive, Scope, Send
from mcpward.identity.authenticator import Authenticator, AuthFailure
from mcpward.identity.ceilings import ConsentCeiling
from mcpward.identity.client_records import StoredRecord
from mcpward.identity.models import StaticToken
from mcpward.identity.tokens import hash_token
from tests.http.gateway_harness import gateway_front, token_entry

TOKEN = "per-request-token-0123456789abcdef"


def test_headers_are_read_once_trimmed_and_repeats_noted() -> None:
    scope: dict[str, Any] = {
        "headers": [
            (b"host", b" 127.0.0.1:80\t"),
            (b"mcp-name", b"a"),
            (b"Mcp-Name", b"b "),
            (b"accept", b"application/json"),
        ]
    }
    headers = read_headers(scope)
    assert scope["headers"][0] == (b"host", b"127.0.0.1:80")
    assert scope["headers"][2] == (b"Mcp-Name", b"b")
    assert headers.get("host") == "127.0.0.1:80"
    assert headers.get("mcp-name") == "b"  # the last copy, as a mapping holds it
    assert headers.count("mcp-name") == 2
    assert headers.count("host") == 1
    assert headers.count("origin") == 0
    assert headers.repeated == {"mcp-name"}


async def test_mailbox_hands_items_over_in_order() -> None:
    box: Mailbox[int] = Mailbox()
    reader = asyncio.ensure_future(box.get())
    await asyncio.sleep(0)
    box.put_nowait(1)
    box.put_nowait(2)
    assert await reader == 1
    assert not box.empty() and box.get_nowait() == 2
    with pytest.raises(IndexError):
        box.get_nowait()
    waiting = asyncio.ensure_future(box.get())
    await asyncio.sleep(0)
    waiting.cancel()  # a cancelled reader leaves later items for the next one
    await asyncio.sleep(0)
    box.put_nowait(3)
    assert await box.get() == 3


class _Revocations:
    def __init__(self) -> None:
        self.subjects: set[str] = set()
        self.asked = 0

    def revoked(self, client_id: str | None, token_sha256: str) -> bool:
        self.asked += 1
        return token_sha256 in self.subjects or client_id in self.subjects


class _Records:
    def __init__(self) -> None:
        self.stored: StoredRecord | None = None

    def record(self, client_id: str) -> StoredRecord | None:
        return self.stored


async def test_a_static_tokens_principal_is_reused_and_revocation_still_asked_each_time() -> None:
    entry = StaticToken(
        client_id="ide",
        token_sha256=hash_token(TOKEN),
        roles=["dev"],
        consent_ceiling=ConsentCeiling.FULL,
    )
    revocations, records = _Revocations(), _Records()
    auth = Authenticator([entry], revocations=revocations, records=records)
    first = await auth.authenticate(f"Bearer {TOKEN}")
    again = await auth.authenticate(f"Bearer {TOKEN}")
    assert again is first and revocations.asked == 2
    records.stored = StoredRecord("ide", ("ops",), ConsentCeiling.READ_ONLY, 1.0)
    changed = await auth.authenticate(f"Bearer {TOKEN}")
    assert changed.identity.roles == ("ops",) and changed.ceiling is ConsentCeiling.READ_ONLY
    assert changed.binding != first.binding  # sessions opened under the old record end
    revocations.subjects.add(hash_token(TOKEN))
    with pytest.raises(AuthFailure) as refused:
        await auth.authenticate(f"Bearer {TOKEN}")
    assert refused.value.status == 401 and revocations.asked == 4


def _headers(*pairs: tuple[str, str]) -> RequestHeaders:
    return read_headers({"headers": [(k.encode(), v.encode()) for k, v in pairs]})


ROUTED = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
}


def test_param_headers_are_checked_only_for_tools_that_declare_them() -> None:
    check = ParamHeaderCheck()
    plain = {"type": "object", "properties": {"region": {"type": "string"}}}
    assert check.declared(plain) == ()
    assert check.rejection(plain, {"region": "eu"}, _headers(("mcp-param-region", "x"))) is None
    assert check.declared(ROUTED) == ("mcp-param-region",)
    ok = _headers(("mcp-param-region", "eu"))
    assert check.rejection(ROUTED, {"region": "eu"}, ok) is None
    wrong = check.rejection(ROUTED, {"region": "us"}, ok)
    assert wrong is not None and wrong.code == -32020
    twice = _headers(("mcp-param-region", "eu"), ("mcp-param-region", "eu"))
    repeated = check.rejection(ROUTED, {"region": "eu"}, twice)
    assert repeated is not None and "more than once" in repeated.message


class _BrokenFront(HttpFrontApp):
    """A front whose request handling has a bug (after starting the response on `/late`)."""

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/late":
            await send({"type": "http.response.start", "status": 200, "headers": []})
        raise KeyError("bug")


async def test_a_bug_fails_closed_once_even_after_the_response_began() -> None:
    app = _BrokenFront.__new__(_BrokenFront)
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start" and any(
            m["type"] == "http.response.start" for m in sent
        ):
            raise RuntimeError("Expected ASGI message 'http.response.body'")
        sent.append(message)

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.disconnect"}

    await app({"type": "http", "path": "/mcp"}, receive, send)
    assert sent[0]["status"] == 500
    assert b"incident" in sent[1]["body"]
    sent.clear()
    await app({"type": "http", "path": "/late"}, receive, send)
    assert [m["type"] for m in sent] == ["http.response.start"]  # cut short, no second start


SLOW_UPSTREAM = textwrap.dedent(
    """
    import json, sys
    cancelled = sys.argv[1]
    TOOLS = [
        {"name": "slow", "inputSchema": {"type": "object"}},
        {"name": "routed", "inputSchema": ROUTED},
    ]
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "notifications/cancelled":
            with open(cancelled, "a") as out:
                out.write(json.dumps(msg["params"]) + "\\n")
            continue
        if "id" not in msg or method is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and msg["params"]["name"] == "slow":
            continue  # never answers: only a cancellation ends it
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "routed"}]}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                              "error": {"code": -32601, "message": "nope"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    """
).replace("ROUTED", json.dumps(ROUTED))
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _modern(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": META}}


def _modern_headers(method: str, name: str | None = None) -> list[tuple[str, str]]:
    headers = [
        ("Authorization", f"Bearer {TOKEN}"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ]
    return headers + ([("Mcp-Name", name)] if name else [])


@pytest.mark.parametrize("close_after_s", [0.05, 0.5])
async def test_closing_a_modern_stream_still_cancels_the_call(
    tmp_path: Path, close_after_s: float
) -> None:
    """Before and after the disconnect watcher starts (WATCH_AFTER_S)."""
    script, cancelled = tmp_path / "slow.py", tmp_path / "cancelled.jsonl"
    script.write_text(SLOW_UPSTREAM)
    upstream = {"id": "s", "command": sys.executable, "args": [str(script), str(cancelled)]}
    front = {"tokens": [token_entry(TOKEN, "ide")]}
    async with gateway_front([upstream], tmp_path / "state", front, guards=[]) as (_, url):
        async with httpx.AsyncClient(timeout=30) as http:
            listed = await http.post(
                url, headers=_modern_headers("tools/list"), json=_modern("tools/list", {})
            )
            assert listed.status_code == 200, listed.text
            request = _modern("tools/call", {"name": "slow", "arguments": {}})
            with pytest.raises(httpx.ReadTimeout):
                await http.post(
                    url,
                    headers=_modern_headers("tools/call", "slow"),
                    json=request,
                    timeout=httpx.Timeout(30, read=close_after_s),
                )
        for _ in range(100):
            if cancelled.exists() and cancelled.read_text().strip():
                break
            await asyncio.sleep(0.05)
        assert cancelled.exists() and "requestId" in cancelled.read_text()


async def test_repeated_param_header_is_refused_through_the_front(tmp_path: Path) -> None:
    script, cancelled = tmp_path / "slow.py", tmp_path / "cancelled.jsonl"
    script.write_text(SLOW_UPSTREAM)
    upstream = {"id": "s", "command": sys.executable, "args": [str(script), str(cancelled)]}
    front = {"tokens": [token_entry(TOKEN, "ide")]}
    async with (
        gateway_front([upstream], tmp_path / "state", front, guards=[]) as (_, url),
        httpx.AsyncClient(timeout=30) as http,
    ):
        await http.post(url, headers=_modern_headers("tools/list"), json=_modern("tools/list", {}))
        call = _modern("tools/call", {"name": "routed", "arguments": {"region": "eu"}})
        base = _modern_headers("tools/call", "routed")
        once = await http.post(url, headers=[*base, ("Mcp-Param-Region", "eu")], json=call)
        assert once.status_code == 200, once.text
        twice = await http.post(
            url,
            headers=[*base, ("Mcp-Param-Region", "eu"), ("Mcp-Param-Region", "eu")],
            json=call,
        )
        assert twice.status_code == 400
        assert twice.json()["error"]["code"] == -32020
