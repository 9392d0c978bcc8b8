"""Several upstreams behind one front: namespacing, wrapped cursors, id remapping, isolation."""

from __future__ import annotations

import asyncio
import json
import time

from tests.relay.conftest import GatewayFactory, echo_upstream


async def list_all(peer, method: str = "tools/list", key: str = "tools") -> list[dict]:
    items, cursor, pages = [], None, 0
    while True:
        result = await peer.call(method, {"cursor": cursor} if cursor else {})
        items += result[key]
        pages += 1
        cursor = result.get("nextCursor")
        if not cursor:
            return items
        assert pages < 20


async def test_lists_are_namespaced_and_paged_with_wrapped_cursors(gateway: GatewayFactory) -> None:
    ups = [
        echo_upstream("a", ECHO_PAGE="2", ECHO_TOOLS="echo,t1,t2"),
        echo_upstream("b", ECHO_PAGE="2", ECHO_TOOLS="echo,t3,t4"),
    ]
    async with gateway(ups) as peer:
        names = [t["name"] for t in await list_all(peer)]
        assert names == ["a__echo", "a__t1", "a__t2", "b__echo", "b__t3", "b__t4"]
        first = await peer.call("tools/list", {})
        assert first["nextCursor"].startswith("mcpward1.")
        bad = await peer.request("tools/list", {"cursor": "2"})
        assert bad["error"]["code"] == -32602
        prompts = [p["name"] for p in await list_all(peer, "prompts/list", "prompts")]
        assert prompts == ["a__greet", "b__greet"]


async def test_calls_are_routed_by_prefix_and_names_restored(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a"), echo_upstream("b")]) as peer:
        result = await peer.call("tools/call", {"name": "b__echo", "arguments": {"x": 1}})
        assert json.loads(result["content"][0]["text"])["name"] == "echo"
        prompt = await peer.call("prompts/get", {"name": "a__greet", "arguments": {}})
        assert json.loads(prompt["messages"][0]["content"]["text"])["name"] == "greet"
        await list_all(peer, "resources/list", "resources")
        read = await peer.call("resources/read", {"uri": "echo://b/readme"})
        assert read["contents"][0]["text"] == "readme of echo://b/readme"
        unknown = await peer.request("tools/call", {"name": "c__echo", "arguments": {}})
        assert unknown["error"]["code"] == -32602


async def test_initialize_merges_capabilities_and_names_the_gateway(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a"), echo_upstream("b")], initialize=False) as peer:
        result = await peer.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        assert result["serverInfo"]["name"] == "mcpward"
        assert result["capabilities"]["tools"]["listChanged"] is True
        assert "[a] echo instructions" in result["instructions"]


async def test_server_to_client_requests_get_unique_ids_and_find_their_way_back(
    gateway: GatewayFactory,
) -> None:
    async with gateway(
        [echo_upstream("a"), echo_upstream("b")], capabilities={"sampling": {}}
    ) as peer:
        calls = [
            asyncio.create_task(peer.request("tools/call", {"name": f"{u}__ask", "arguments": {}}))
            for u in "ab"
        ]
        asks = [await asyncio.wait_for(peer.unsolicited.get(), 10) for _ in range(2)]
        assert {a["method"] for a in asks} == {"sampling/createMessage"}
        assert (
            len({a["id"] for a in asks}) == 2
        )  # both upstreams used id 1000; the client sees two ids
        for ask in asks:
            await peer.send_bytes(
                json.dumps(
                    {"jsonrpc": "2.0", "id": ask["id"], "result": {"ok": ask["id"]}}
                ).encode()
                + b"\n"
            )
        answers = [json.loads((await c)["result"]["content"][0]["text"]) for c in calls]
        assert all(a["answerId"] == 1000 for a in answers)  # each upstream got its own id back
        assert sorted(a["result"]["ok"] for a in answers) == sorted(a["id"] for a in asks)


async def test_server_requests_need_the_client_capability(gateway: GatewayFactory) -> None:
    async with gateway([echo_upstream("a")]) as peer:  # no sampling capability declared
        result = await peer.call("tools/call", {"name": "ask", "arguments": {}})
        answer = json.loads(result["content"][0]["text"])
        assert answer["error"]["code"] == -32601


async def test_a_crashed_upstream_does_not_affect_the_others_and_comes_back(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a"), echo_upstream("b")]) as peer:
        crashed = await peer.request("tools/call", {"name": "a__crash", "arguments": {}})
        assert crashed["error"]["code"] == -32011
        assert crashed["error"]["data"] == {"upstream": "a", "reason": "crashed"}
        assert await peer.call("tools/call", {"name": "b__echo", "arguments": {}})
        deadline = time.monotonic() + 15
        while True:  # a restarts with backoff and its tools come back
            reply = await peer.request("tools/call", {"name": "a__echo", "arguments": {}})
            if "result" in reply:
                break
            assert reply["error"]["code"] == -32011
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        seen = []
        while not peer.unsolicited.empty():
            seen.append(peer.unsolicited.get_nowait().get("method"))
        assert "notifications/tools/list_changed" in seen


async def test_a_hanging_upstream_answers_minus_32011_within_the_deadline(
    gateway: GatewayFactory,
) -> None:
    async with gateway(
        [echo_upstream("a"), echo_upstream("b")], settings={"request_timeout_s": 1}
    ) as peer:
        started = time.monotonic()
        hung = asyncio.create_task(peer.request("tools/call", {"name": "a__hang", "arguments": {}}))
        assert await peer.call("tools/call", {"name": "b__echo", "arguments": {}})
        reply = await hung
        assert reply["error"]["code"] == -32011 and reply["error"]["data"]["reason"] == "timeout"
        assert time.monotonic() - started < 10
        last = await peer.call("tools/call", {"name": "a__last_cancel", "arguments": {}})
        assert json.loads(last["content"][0]["text"]) is not None  # the upstream was told to stop


async def test_client_cancellation_reaches_the_upstream_with_its_id(
    gateway: GatewayFactory,
) -> None:
    async with gateway([echo_upstream("a")]) as peer:
        hung = asyncio.create_task(
            peer.request("tools/call", {"name": "hang", "arguments": {}}, request_id="c-1")
        )
        await asyncio.sleep(0.3)
        await peer.notify("notifications/cancelled", {"requestId": "c-1", "reason": "user stop"})
        await asyncio.sleep(0.3)
        last = await peer.call("tools/call", {"name": "last_cancel", "arguments": {}})
        assert isinstance(json.loads(last["content"][0]["text"]), int)  # the upstream's own id
        why = await peer.call(
            "tools/call", {"name": "last_cancel", "arguments": {"field": "reason"}}
        )
        assert json.loads(why["content"][0]["text"]) == "user stop"  # the client's reason, kept
        assert not hung.done()  # a cancelled request gets no answer
        hung.cancel()


async def test_tool_filter_hides_and_denies(gateway: GatewayFactory) -> None:
    guard = {
        "kind": "tool_filter",
        "runs_on": ["tools_list", "tool_invoke"],
        "config": {"rules": [{"upstream": "b", "deny": ["e*"]}]},
    }
    async with gateway([echo_upstream("a"), echo_upstream("b")], guards=[guard]) as peer:
        names = [t["name"] for t in await list_all(peer)]
        assert "a__echo" in names and "b__echo" not in names
        denied = await peer.request("tools/call", {"name": "b__echo", "arguments": {}})
        assert denied["error"]["code"] == -32013
        assert denied["error"]["data"]["guard"] == "tool_filter"
        assert denied["error"]["data"]["code"] == "tool_not_allowed"
        assert await peer.call("tools/call", {"name": "a__echo", "arguments": {}})
