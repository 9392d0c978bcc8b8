"""Upstream processes as a managed resource, on the stdio front and between sessions that
share one process: the capacity error, and ids, progress, cancellation, list_changed and
server->client requests kept apart per session."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpward.config.loader import parse_config
from mcpward.protocol.jsonrpc import Message, RequestId, classify
from mcpward.relay.gateway import Gateway
from mcpward.relay.session import Session
from tests.relay.conftest import ECHO, GatewayFactory, echo_upstream

TOOLS = "echo,pid,progress,notify,ask,hang,last_cancel"


@pytest.mark.asyncio
async def test_a_reached_cap_answers_minus_32011_capacity_on_stdio(
    gateway: GatewayFactory,
) -> None:
    upstreams = [echo_upstream("a"), echo_upstream("b")]
    async with gateway(upstreams, settings={"max_processes": 1}) as peer:
        answers = [
            await peer.request("tools/call", {"name": f"{uid}__echo", "arguments": {}})
            for uid in ("a", "b")
        ]
        served = [a for a in answers if "result" in a]
        refused = [a["error"] for a in answers if "error" in a]
        assert len(served) == 1 and len(refused) == 1
        assert refused[0]["code"] == -32011
        assert refused[0]["data"]["reason"] == "capacity"
        # the gateway keeps serving what it can
        assert "result" in await peer.request("tools/list")


class Collected:
    """A session's downstream: what the gateway sent this client."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.arrived = asyncio.Event()

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        self.messages.append(message)
        self.arrived.set()

    async def answer(self, request_id: Any, timeout: float = 20.0) -> Message:
        async with asyncio.timeout(timeout):
            while True:
                for message in self.messages:
                    if message.get("id") == request_id and "method" not in message:
                        return message
                self.arrived.clear()
                await self.arrived.wait()

    def notifications(self, method: str) -> list[Message]:
        return [m for m in self.messages if m.get("method") == method and "id" not in m]


async def send(session: Session, message: Message) -> None:
    await session.handle(classify({"jsonrpc": "2.0", **message}))


async def call(session: Session, out: Collected, rid: Any, name: str, **params: Any) -> Any:
    await send(session, {"id": rid, "method": "tools/call", "params": {"name": name, **params}})
    answer = await out.answer(rid)
    assert "result" in answer, answer
    return answer["result"]["content"][0]["text"]


async def opened(gw: Gateway) -> tuple[Session, Collected]:
    out = Collected()
    session = await gw.open_session(out)
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    await send(session, {"id": "init", "method": "initialize", "params": init})
    assert "result" in await out.answer("init")
    await send(session, {"method": "notifications/initialized"})
    return session, out


@pytest.mark.asyncio
async def test_sessions_sharing_a_process_stay_apart(tmp_path: Path) -> None:
    pid_log = tmp_path / "pids"
    upstream = {
        "id": "echo",
        "command": sys.executable,
        "args": [ECHO],
        "env": {"ECHO_TOOLS": TOOLS, "ECHO_PID_LOG": str(pid_log)},
        "processes": {"sharing": "identity"},
        "restart": {"initial_backoff_s": 0.1},
    }
    data = {
        "upstreams": [upstream],
        "state_dir": str(tmp_path / "state"),
        "guards": {"replace_defaults": True, "list": []},
    }
    gw = await Gateway.start(parse_config(data, "test"))
    try:
        (one, out1), (two, out2) = await asyncio.gather(opened(gw), opened(gw))
        pids = await asyncio.gather(call(one, out1, 1, "pid"), call(two, out2, 1, "pid"))
        assert pids[0] == pids[1] and pid_log.read_text().split() == [pids[0]]

        # the same request id from both sessions: each answer reaches its own session
        echoes = await asyncio.gather(
            call(one, out1, 2, "echo", arguments={"who": "one"}),
            call(two, out2, 2, "echo", arguments={"who": "two"}),
        )
        assert [json.loads(e)["arguments"]["who"] for e in echoes] == ["one", "two"]

        # progress tokens: the process sees distinct tokens, each client its own
        meta = {"_meta": {"progressToken": "tok"}}
        seen = await asyncio.gather(
            call(one, out1, 3, "progress", arguments={}, **meta),
            call(two, out2, 3, "progress", arguments={}, **meta),
        )
        assert seen[0] != seen[1] and "tok" not in seen
        for out in (out1, out2):
            (progress,) = out.notifications("notifications/progress")
            assert progress["params"]["progressToken"] == "tok"

        # list_changed belongs to the process: every session sharing it is told
        await call(one, out1, 4, "notify")
        for out in (out1, out2):
            assert out.notifications("notifications/tools/list_changed")

        # a server->client request has no single owner: refused, never sent to a client
        asked = json.loads(await call(one, out1, 5, "ask"))
        assert asked["error"]["code"] == -32601
        assert not [
            m for m in out1.messages + out2.messages if m.get("method", "").startswith("sampling")
        ]

        # cancellation reaches the process under the id the process knows
        await send(two, {"id": 6, "method": "tools/call", "params": {"name": "hang"}})
        await asyncio.sleep(0.2)
        await send(two, {"method": "notifications/cancelled", "params": {"requestId": 6}})
        await asyncio.sleep(0.2)
        cancelled = json.loads(await call(one, out1, 7, "last_cancel"))
        assert isinstance(cancelled, int)  # the process was told, under an id it knows

        # a crash fails the calls in flight; both sessions come back on one new process
        await send(two, {"id": 8, "method": "tools/call", "params": {"name": "crash"}})
        assert (await out2.answer(8))["error"]["data"]["reason"] == "crashed"
        await asyncio.sleep(1.0)  # the links' restart backoff (0.1 s) and the new handshake
        again = await asyncio.gather(call(one, out1, 9, "pid"), call(two, out2, 9, "pid"))
        assert again[0] == again[1] != pids[0]
        assert len(pid_log.read_text().split()) == 2 and gw.processes.counts() == {"echo": 1}

        # one session closing leaves the other served by the same process
        await gw.close_session(one)
        assert await call(two, out2, 10, "pid") == again[0]
        assert gw.processes.counts() == {"echo": 1}
    finally:
        await gw.close()
    assert gw.processes.counts() == {"echo": 0}
