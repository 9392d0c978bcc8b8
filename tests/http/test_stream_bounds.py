"""What a client that does not read, or an idle session, can make the HTTP front keep is bounded in
bytes (issue 23, item 10b/c): an SSE stream's buffer, a session's event log, the process's logs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from mcpward.fronts.http.event_log import ENTRY_OVERHEAD_BYTES, EventBudget, EventLog
from mcpward.fronts.http.legacy import GET_STREAM, LegacySession, stream_key
from mcpward.fronts.http.mailbox import Mailbox
from mcpward.fronts.http.modern import OVERFLOWED, Waiter
from mcpward.protocol import jsonrpc
from mcpward.relay.gateway import Gateway
from tests.http.gateway_harness import gateway_front, token_entry

DEAF = str(Path(__file__).resolve().parents[1] / "fixtures" / "deaf_upstream.py")
TOKEN = "stream-bounds-token-0123456789abcdef"
HANG_GUARD_S = 120.0
STREAM_CAP = 256 * 1024
SESSION_LOG_CAP = 512 * 1024
EVENT_BYTES = 50_000


def buffered(queue: Any) -> int:
    """The bytes a stream's queue holds (read the same way before and after the caps existed)."""
    if hasattr(queue, "queued_bytes"):
        return int(queue.queued_bytes)
    return sum(len(event[1]) for event in queue._items if event and event[1])


def logged(log: Any) -> int:
    return sum(len(entry[1]) for entry in log._events.values() if entry[1])


async def post(http: aiohttp.ClientSession, url: str, body: dict[str, Any], sid: str | None) -> Any:
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if sid is not None:
        headers["Mcp-Session-Id"] = sid
    async with http.post(url, data=json.dumps(body), headers=headers) as response:
        text = await response.text()
        return response.headers.get("mcp-session-id"), response.status, text


async def open_unread_get(url: str, sid: str) -> asyncio.StreamWriter:
    """A GET stream whose client never reads a byte."""
    parts = urlsplit(url)
    _reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    head = (
        f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    )
    writer.write(head.encode())
    await writer.drain()
    return writer


def legacy_session(gateway: Gateway) -> LegacySession:
    (session,) = gateway.sessions
    downstream = session.downstream
    assert isinstance(downstream, LegacySession)
    return downstream


async def test_an_unread_get_stream_and_the_event_log_stay_bounded(tmp_path: Path) -> None:
    upstream = {"id": "deaf", "command": sys.executable, "args": [DEAF]}
    front = {
        "tokens": [token_entry(TOKEN, "alice")],
        "max_stream_buffer_bytes": STREAM_CAP,
        "max_event_log_bytes_per_session": SESSION_LOG_CAP,
    }
    async with (
        gateway_front([upstream], tmp_path / "state", front, guards=[]) as (gateway, url),
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HANG_GUARD_S)) as http,
    ):
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        sid, status, _ = await post(http, url, jsonrpc.request(1, "initialize", init), None)
        assert status == 200 and sid
        await post(http, url, jsonrpc.notification("notifications/initialized"), sid)
        unread = await open_unread_get(url, sid)
        try:
            session = legacy_session(gateway)
            for _ in range(200):  # until the GET stream is open (a hang guard, not a timer)
                if GET_STREAM in session.live:
                    break
                await asyncio.sleep(0.05)
            assert GET_STREAM in session.live
            stream = session.live[GET_STREAM]
            # 15 MB of notifications for a client that reads none of them
            call = {"name": "chatter", "arguments": {"count": 300, "bytes": EVENT_BYTES}}
            _, status, text = await post(http, url, jsonrpc.request(2, "tools/call", call), sid)
            assert status == 200 and "chattered" in text
            assert buffered(stream) <= STREAM_CAP + EVENT_BYTES + 1024
            assert session.live.get(GET_STREAM) is not stream  # closed: the client resumes
            assert logged(session.log) <= SESSION_LOG_CAP
        finally:
            unread.close()


async def test_a_cancelled_request_leaves_no_pending_stream(tmp_path: Path) -> None:
    upstream = {"id": "deaf", "command": sys.executable, "args": [DEAF]}
    front = {"tokens": [token_entry(TOKEN, "alice")]}
    async with (
        gateway_front([upstream], tmp_path / "state", front, guards=[]) as (gateway, url),
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HANG_GUARD_S)) as http,
    ):
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        sid, _, _ = await post(http, url, jsonrpc.request(1, "initialize", init), sid=None)
        await post(http, url, jsonrpc.notification("notifications/initialized"), sid)
        session = legacy_session(gateway)
        hang = {"name": "hang", "arguments": {}}
        for rid in range(10, 20):
            call = asyncio.ensure_future(
                post(http, url, jsonrpc.request(rid, "tools/call", hang), sid)
            )
            for _ in range(400):  # until the request is in flight (a hang guard)
                if stream_key(rid) in session.pending:
                    break
                await asyncio.sleep(0.05)
            cancel = jsonrpc.notification("notifications/cancelled", {"requestId": rid})
            await post(http, url, cancel, sid)
            call.cancel()  # the client goes away; no answer will ever come
            with contextlib.suppress(asyncio.CancelledError):
                await call
        for _ in range(400):
            if not session.pending and not session.live:
                break
            await asyncio.sleep(0.05)
        assert not session.pending  # else the session could never be reaped as idle


def test_event_log_evicts_by_bytes_per_session_and_per_process() -> None:
    budget = EventBudget(cap_bytes=10_000)
    one = EventLog(max_bytes=7_000, budget=budget)  # three events of 2,000 bytes (+ overhead)
    two = EventLog(max_bytes=7_000, budget=budget)
    first = one.append("get", b"a" * 2_000, False)
    for _ in range(4):
        one.append("get", b"a" * 2_000, False)
    assert len(one) == 3 and one.bytes <= 7_000 and one.after(first) is None  # the oldest went
    for _ in range(3):
        two.append("get", b"b" * 2_000, False)
    assert budget.used_bytes <= 10_000 and len(one) + len(two) == 4
    assert len(two) == 3  # the process's oldest events were one's
    huge = two.append("get", b"h" * 9_000, True)  # over the session's cap: kept, alone
    assert two.after(huge) == ("get", []) and len(one) == 0
    two.close()
    one.close()
    assert budget.used_bytes == 0
    assert one.bytes == 0 and ENTRY_OVERHEAD_BYTES > 0


def test_mailbox_offer_refuses_past_its_cap() -> None:
    box: Mailbox[str] = Mailbox(cap_bytes=10)
    assert box.offer("a", 6) and not box.offer("b", 6) and box.queued_bytes == 6
    box.put_nowait("marker")  # markers always go
    assert box.get_nowait() == "a" and box.queued_bytes == 0
    assert box.offer("big", 100)  # alone, anything fits


async def test_a_modern_stream_that_is_not_read_is_closed() -> None:
    waiter = Waiter("client-1", listen=True, stream_cap_bytes=64 * 1024)
    note = jsonrpc.notification("notifications/message", {"data": "x" * 10_000})
    for _ in range(100):
        waiter.put(note, final=False)
    assert waiter.overflowed and waiter.queue.queued_bytes <= 64 * 1024
    items = [waiter.queue.get_nowait() for _ in range(7)]
    assert items[-1] is OVERFLOWED
    waiter.put({"id": 1, "result": {}}, final=True)  # the answer still goes
    assert waiter.queue.get_nowait() == (True, {"id": 1, "result": {}})
