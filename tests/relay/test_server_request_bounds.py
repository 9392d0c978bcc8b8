"""What an upstream can make a session remember is capped and forgotten (issue 23, item 10a):
server→client requests and their progress tokens go when answered, and never pass a cap."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcpward.config.loader import parse_config
from mcpward.protocol.jsonrpc import Message, RequestId, classify
from mcpward.relay.gateway import Gateway
from mcpward.relay.server_requests import MAX_WAITING
from mcpward.relay.session import Session

DEAF = str(Path(__file__).resolve().parents[1] / "fixtures" / "deaf_upstream.py")
HANG_GUARD_S = 120.0


class SamplingClient:
    """A session's downstream that answers every sampling request (or none)."""

    def __init__(self, answer_sampling: bool) -> None:
        self.answer_sampling = answer_sampling
        self.session: Session | None = None
        self.messages: dict[Any, Message] = {}
        self.sampling_seen = 0
        self.arrived = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        if message.get("method") == "sampling/createMessage":
            self.sampling_seen += 1
            if self.answer_sampling and self.session is not None:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"role": "assistant"}}
                task = asyncio.ensure_future(self.session.handle(classify(reply)))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        elif "method" not in message:
            self.messages[message.get("id")] = message
        self.arrived.set()

    async def answer(self, request_id: Any) -> Message:
        async with asyncio.timeout(HANG_GUARD_S):
            while request_id not in self.messages:
                self.arrived.clear()
                await self.arrived.wait()
        return self.messages[request_id]


async def opened(gw: Gateway, client: SamplingClient) -> Session:
    session = await gw.open_session(client)
    client.session = session
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    await session.handle(
        classify({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": init})
    )
    assert "result" in await client.answer("i")
    await session.handle(classify({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    return session


async def flood(session: Session, client: SamplingClient, rid: int, **arguments: int) -> str:
    params = {"name": "flood", "arguments": arguments}
    request = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    await session.handle(classify(request))
    answer = await client.answer(rid)
    assert "result" in answer, answer
    return str(answer["result"]["content"][0]["text"])


async def start(tmp_path: Path) -> Gateway:
    upstream = {"id": "deaf", "command": sys.executable, "args": [DEAF]}
    data = {
        "upstreams": [upstream],
        "state_dir": str(tmp_path / "state"),
        "guards": {"replace_defaults": True, "list": []},
    }
    return await Gateway.start(parse_config(data, "test"))


async def test_answered_server_requests_and_their_tokens_are_forgotten(tmp_path: Path) -> None:
    gw = await start(tmp_path)
    client = SamplingClient(answer_sampling=True)
    try:
        session = await opened(gw, client)
        text = await flood(session, client, 1, count=600, token_bytes=200, expect=600)
        assert text == "answered 600" and client.sampling_seen == 600
        assert len(session.server_requests) == 0
        assert session.server_requests.progress_tokens == 0
        # large tokens are relayed but never remembered
        assert await flood(session, client, 2, count=50, token_bytes=100_000) == "answered 50"
        assert session.server_requests.progress_tokens == 0
    finally:
        await gw.close()


async def test_unanswered_server_requests_stop_at_the_cap(tmp_path: Path) -> None:
    gw = await start(tmp_path)
    client = SamplingClient(answer_sampling=False)
    try:
        session = await opened(gw, client)
        count = MAX_WAITING + 100
        # the gateway answers the ones over the cap itself (an error), at once
        text = await flood(session, client, 1, count=count, token_bytes=100, expect=100)
        assert text == "answered 100"
        assert client.sampling_seen == MAX_WAITING
        assert len(session.server_requests) == MAX_WAITING
        assert session.server_requests.progress_tokens == MAX_WAITING
    finally:
        await gw.close()


class FakeLink:
    """Only identity matters to ServerRequests."""


def test_server_requests_keep_only_short_keys_and_forget_them() -> None:
    from mcpward.relay.server_requests import ServerRequests

    link: Any = FakeLink()
    requests = ServerRequests(max_waiting=2)
    first = requests.add(link, 7, {"progressToken": "tok"})
    assert first is not None and requests.progress_link("tok") is link
    assert requests.add(link, "x" * 10_000, None) is None  # an id too long to keep
    second = requests.add(link, 8, {"progressToken": ["odd"]})  # kept, its token is not
    assert second is not None and requests.progress_tokens == 1
    assert requests.add(link, 9, None) is None  # the cap
    assert requests.progress_link(["odd"]) is None and requests.progress_link({"a": 1}) is None
    answered = requests.answered(first)
    assert answered is not None and answered.upstream_id == 7
    assert requests.progress_link("tok") is None and requests.answered(first) is None
    assert requests.cancelled(link, 8) == second and len(requests) == 0
    requests.add(link, 10, {"progressToken": 5})
    requests.forget_link(link)
    assert len(requests) == 0 and requests.progress_tokens == 0


def test_progress_owners_keep_short_tokens_of_their_own_request() -> None:
    from mcpward.relay.upstream_calls import ProgressOwners

    owners = ProgressOwners()
    assert owners.claim("t", 1) and not owners.claim("t", 2)  # in use by request 1
    assert not owners.claim("y" * 1000, 3) and not owners.claim([1], 4)
    assert owners.get([1], "dflt") == "dflt" and owners.get("t") == 1
    owners.release("t", 2)  # not its token
    assert owners.get("t") == 1
    owners.release("t", 1)
    assert len(owners) == 0


async def test_requests_in_flight_stop_at_the_cap(tmp_path: Path) -> None:
    from mcpward.relay.session import MAX_INFLIGHT_REQUESTS

    gw = await start(tmp_path)
    client = SamplingClient(answer_sampling=False)
    try:
        session = await opened(gw, client)
        hang = {"name": "hang", "arguments": {}}
        for rid in range(100, 100 + MAX_INFLIGHT_REQUESTS):
            request = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": hang}
            await session.handle(classify(request))
        ping = {"jsonrpc": "2.0", "id": "over", "method": "ping"}
        await session.handle(classify(ping))
        refused = await client.answer("over")
        assert refused["error"]["code"] == -32600 and "in flight" in refused["error"]["message"]
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 100},
        }
        await session.handle(classify(cancel))
        for _ in range(1000):  # until the cancelled task has ended (a hang guard)
            if not session.in_flight(100):
                break
            await asyncio.sleep(0.01)
        await session.handle(classify({**ping, "id": "again"}))
        again = await client.answer("again")
        assert again.get("result") == {}, again
    finally:
        await gw.close()
