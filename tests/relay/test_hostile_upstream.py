"""An upstream that answers what no MCP server may (issue 23, items 3, 6, 8, 11), through the real
gateway with its default guards: every answer is checked where it meets its request; a bad one
fails its one call (-32011 invalid_answer) with a receipt, never reaches the client, never stops
the link's reader; repeated bad answers restart the upstream; malformed notifications are
dropped with a bounded number of log lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson

from mcpward.evidence.settings import EvidencePaths
from mcpward.relay.links import INVALID_ANSWERS_BEFORE_RESTART
from mcpward.store.ledger_sqlite import read_snapshot
from mcpward.telemetry.log_limits import LINES_PER_MINUTE
from mcpward.testing.rawpeer import RawPeer
from tests.support.gateway import gateway_argv, write_gateway_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import hostile_upstream  # noqa: E402  (the fixture's planted values and its list of bad answers)

HANG_GUARD_S = 180.0
PLANTED = (
    hostile_upstream.AWS_KEY,
    hostile_upstream.GITHUB_TOKEN,
    "ignore all previous instructions",
)


def hostile(upstream_id: str = "hostile", **env: str) -> dict[str, Any]:
    return {
        "id": upstream_id,
        "command": sys.executable,
        "args": [str(FIXTURES / "hostile_upstream.py")],
        "env": env,
        "restart": {"initial_backoff_s": 0.1},
    }


@asynccontextmanager
async def gateway(directory: Path, *, level: str = "debug", **env: str) -> AsyncIterator[RawPeer]:
    """The gateway with its built-in default guards (guards omitted) before the hostile server."""
    config = write_gateway_config(
        directory,
        [hostile(**env)],
        gateway={"relist_interval_s": 0, "request_timeout_s": 90},
    )
    text = config.read_text(encoding="utf-8").replace("level: debug", f"level: {level}")
    config.write_text(text, encoding="utf-8")
    peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
    peer.keep_raw = True
    try:
        await asyncio.wait_for(peer.initialize(), HANG_GUARD_S)
        yield peer
    finally:
        await peer.close()


async def call(peer: RawPeer, name: str, **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": {}, **extra}
    return await asyncio.wait_for(peer.request("tools/call", params), HANG_GUARD_S)


def text_of(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    return str(reply["result"]["content"][0]["text"])


def receipts(directory: Path) -> list[dict[str, Any]]:
    paths = EvidencePaths.resolve(directory / "state")
    with read_snapshot(paths.ledger) as view:
        entries = [orjson.loads(e.body) for e in view.entries()]
    return [e["receipt"] for e in entries if e["kind"] == "receipt"]


def calls_recorded(directory: Path) -> list[dict[str, Any]]:
    return [r for r in receipts(directory) if r["method"] == "tools/call"]


def assert_nothing_planted_reached(peer: RawPeer) -> None:
    for line in peer.raw_lines:
        lowered = line.decode("utf-8", "replace").lower()
        for planted in PLANTED:
            assert planted.lower() not in lowered, f"{planted!r} reached the client"


async def test_an_answer_with_an_array_or_object_id_does_not_stop_the_link(
    tmp_path: Path,
) -> None:
    async with gateway(tmp_path) as peer:
        # the fixture sends an answer with an id no request has, then the real answer: the
        # reader must live on to read the second (before: it died of the first, silently)
        assert text_of(await call(peer, "array_id")) == "answered after a bad id"
        assert text_of(await call(peer, "object_id")) == "answered after a bad id"
        assert text_of(await call(peer, "ok")) == "fine"
        assert_nothing_planted_reached(peer)


async def test_each_invalid_answer_fails_its_call_with_a_receipt_and_reaches_no_client(
    tmp_path: Path,
) -> None:
    names = list(hostile_upstream.BAD)
    async with gateway(tmp_path) as peer:
        for name in names:
            reply = await call(peer, name)
            assert "result" not in reply, (name, reply)
            error = reply["error"]
            assert error["code"] == -32011, (name, error)
            assert error["data"]["reason"] == "invalid_answer", (name, error)
        # the link is still usable (restarted after every few bad answers)
        assert text_of(await call(peer, "ok")) == "fine"
        assert_nothing_planted_reached(peer)
    recorded = calls_recorded(tmp_path)
    failed = [r for r in recorded if r["error_reason"] == "invalid_answer"]
    assert len(failed) == len(names)
    assert all(r["error_code"] == -32011 and r["decision"] == "error" for r in failed)
    assert len(recorded) == len(names) + 1


async def test_repeated_invalid_answers_restart_the_upstream(tmp_path: Path) -> None:
    async with gateway(tmp_path) as peer:
        before = text_of(await call(peer, "pid"))
        for _ in range(INVALID_ANSWERS_BEFORE_RESTART):
            reply = await call(peer, "result_zero")
            assert reply["error"]["data"]["reason"] == "invalid_answer"
        after = text_of(await call(peer, "pid"))
        assert after != before, "the upstream was not restarted"
    log = (tmp_path / "gateway.log").read_text(encoding="utf-8")
    assert "invalid_answer" in log


async def test_a_result_with_a_non_object_meta_is_refused_and_recorded(tmp_path: Path) -> None:
    # Such a result earned a response_injection warning, and adding the warning to its _meta
    # failed: -32012 every time, and no receipt. MCP's _meta is an object: the answer is invalid.
    async with gateway(tmp_path) as peer:
        for name in ("warn_meta_string", "warn_meta_list"):
            reply = await call(peer, name)
            assert reply["error"]["code"] == -32011, (name, reply)
            assert reply["error"]["data"]["reason"] == "invalid_answer"
        assert text_of(await call(peer, "ok")) == "fine"
    recorded = calls_recorded(tmp_path)
    assert [r["error_reason"] for r in recorded] == ["invalid_answer", "invalid_answer", None]


async def test_every_judged_call_leaves_a_receipt_even_an_internal_failure(
    tmp_path: Path,
) -> None:
    # Before: a list progressToken and a lone surrogate beside a 20-digit integer were answered
    # -32012 with a traceback and no receipt (1 receipt for 3 calls). A client-side frame the
    # parser refuses at the edge (-32700/-32600/-32602, never judged) needs no receipt; anything
    # judged does.
    frames = [
        b'{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"ok",'
        b'"arguments":{},"_meta":{"progressToken":[1]}}}',
        b'{"jsonrpc":"2.0","id":102,"method":"tools/call","params":{"name":"ok",'
        b'"arguments":{"s":"\\ud800","n":12345678901234567890}}}',
        b'{"jsonrpc":"2.0","id":103,"method":"tools/call","params":{"name":"ok","arguments":{}}}',
    ]
    judged: list[dict[str, Any]] = []
    async with gateway(tmp_path, level="info") as peer:
        for frame in frames:
            request_id = json.loads(frame)["id"]
            # a frame the edge cannot read safely (a lone surrogate) is answered with id null
            waiters = {
                asyncio.ensure_future(peer.expect_reply(request_id)),
                asyncio.ensure_future(peer.expect_reply(None)),
            }
            await peer.send_bytes(frame + b"\n")
            done, pending = await asyncio.wait(
                waiters, timeout=HANG_GUARD_S, return_when=asyncio.FIRST_COMPLETED
            )
            for waiter in pending:
                waiter.cancel()
            assert done, f"request {request_id} was never answered"
            reply = done.pop().result()
            if reply.get("error", {}).get("code") not in (-32700, -32600, -32602):
                judged.append(reply)
    recorded = calls_recorded(tmp_path)
    assert len(recorded) == len(judged) >= 1
    for reply in judged:
        error = reply.get("error")
        if error is not None and error["code"] == -32012:
            incident = error["data"]["incident"]
            assert any(r["error_reason"] == f"incident_{incident}" for r in recorded)
    log = (tmp_path / "gateway.log").read_text(encoding="utf-8")
    assert "Traceback" not in log  # one error line per incident at the default level


async def test_a_flood_of_malformed_notifications_is_dropped_with_bounded_log_lines(
    tmp_path: Path,
) -> None:
    async with gateway(tmp_path, HOSTILE_FLOOD="300") as peer:
        assert text_of(await call(peer, "flood")) == "after the flood"
        assert text_of(await call(peer, "ok")) == "fine"
        relayed = []
        while not peer.unsolicited.empty():
            relayed.append(peer.unsolicited.get_nowait())
    for message in relayed:  # nothing malformed was relayed to the client
        assert isinstance(message.get("method"), str)
        assert isinstance(message.get("params", {}), dict)
        token = message.get("params", {}).get("progressToken")
        assert token is None or isinstance(token, (str, int))
    lines = (tmp_path / "gateway.log").read_text(encoding="utf-8").splitlines()
    about_flood = [
        line
        for line in lines
        if "hostile" in line and any(w in line for w in ("dropped", "failed", "suppress"))
    ]
    # three kinds (invalid notification, unparseable frame, non-object frame), each at most
    # LINES_PER_MINUTE lines, then one "suppressing" line
    assert len(about_flood) <= 3 * (LINES_PER_MINUTE + 1), about_flood[-5:]
    assert not any("Traceback" in line for line in lines)
