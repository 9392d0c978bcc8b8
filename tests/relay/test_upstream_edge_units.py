"""The upstream edge in process (issue 23, items 3, 6, 8, 11): the link's reader with a scripted
connection, the judged call's incident receipt, with_warnings, the rate-limited log, the checks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpward.config.upstreams import RestartPolicy
from mcpward.evidence.receipt import payload_hashes
from mcpward.evidence.record import DecisionRecord
from mcpward.protocol.errors import UpstreamFailure
from mcpward.relay import upstream_frames
from mcpward.relay.judged import JudgedCalls, with_warnings
from mcpward.relay.links import (
    INVALID_ANSWERS_BEFORE_RESTART,
    LinkState,
    UpstreamError,
    UpstreamLink,
)
from mcpward.relay.lists import ListRelay
from mcpward.relay.shared_process import SharedLease, SharedProcess
from mcpward.telemetry.log_limits import LimitedLog
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable

HANG_GUARD_S = 10.0


class ScriptedConnection(UpstreamConnection):
    """Answers nothing by itself: the test puts (message, related) pairs in `inbox`."""

    def __init__(self) -> None:
        super().__init__("scripted")
        self.inbox: asyncio.Queue[tuple[dict[str, Any], Any] | Exception] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.starts = 0

    @property
    def identity_digest(self) -> str:
        return "scripted"

    async def start(self) -> None:
        self.starts += 1
        self.inbox = asyncio.Queue()

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def receive(self) -> dict[str, Any]:
        return (await self.receive_related())[0]

    async def receive_related(self) -> tuple[dict[str, Any], Any]:
        item = await self.inbox.get()
        if isinstance(item, Exception):
            raise item
        return item

    async def close(self) -> None:
        return None


def make_link(
    conn: ScriptedConnection, received: list[dict[str, Any]] | None = None
) -> UpstreamLink:
    async def on_message(link: UpstreamLink, message: dict[str, Any], related: Any) -> None:
        if received is not None:
            received.append(message)

    async def on_state(link: UpstreamLink) -> None:
        return None

    return UpstreamLink(
        conn,
        RestartPolicy(initial_backoff_s=0.01),
        request_timeout_s=HANG_GUARD_S,
        connect_timeout_s=HANG_GUARD_S,
        on_message=on_message,
        on_state=on_state,
    )


async def answer_when_sent(conn: ScriptedConnection, frame: Any, related: bool = False) -> None:
    """Wait for the next request, then put `frame(request id)` in the inbox."""
    seen = len(conn.sent)
    while not (fresh := [m for m in conn.sent[seen:] if "method" in m and "id" in m]):
        await asyncio.sleep(0.001)  # (the link's own answers to the upstream do not count)
    rid = fresh[0]["id"]
    conn.inbox.put_nowait((frame(rid), rid if related else None))


async def request(link: UpstreamLink, conn: ScriptedConnection, frame: Any, **kw: Any) -> Any:
    answering = asyncio.ensure_future(answer_when_sent(conn, frame, **kw))
    try:
        return await asyncio.wait_for(link.request_raw("tools/call", {}), HANG_GUARD_S)
    finally:
        if not answering.done():
            answering.cancel()  # the request failed before it was sent
        with contextlib.suppress(asyncio.CancelledError):
            await answering


def ok(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": []}}


async def test_an_array_or_object_id_answer_does_not_stop_the_reader() -> None:
    conn = ScriptedConnection()
    link = make_link(conn)
    await link.ensure_started()
    try:
        for bad in ([1], {"id": 1}, [[]], {"a": {}}):
            conn.inbox.put_nowait(({"jsonrpc": "2.0", "id": bad, "result": {}}, None))
        assert await request(link, conn, ok) == ok(conn.sent[-1]["id"])
        assert link.up and link._reader is not None and not link._reader.done()
    finally:
        await link.close()


@pytest.mark.parametrize(
    "frame",
    [
        lambda rid: {"jsonrpc": "2.0", "id": rid, "result": "AKIA"},
        lambda rid: {"jsonrpc": "2.0", "id": rid, "result": [1]},
        lambda rid: {"jsonrpc": "1.0", "id": rid, "result": {}},
        lambda rid: {"jsonrpc": "2.0", "id": rid, "result": {}, "error": {"code": 1}},
        lambda rid: {"jsonrpc": "2.0", "id": rid, "error": {"code": None, "message": "m"}},
        lambda rid: {"jsonrpc": "2.0", "id": rid, "error": {"code": 1, "message": 2}},
        lambda rid: {"jsonrpc": "2.0", "id": rid, "result": {"_meta": "x"}},
        # over HTTP the stream that carried an answer with an unusable id says which it was for
        lambda rid: {"jsonrpc": "2.0", "id": [rid], "result": {}},
    ],
)
async def test_an_invalid_answer_fails_its_one_call(frame: Any) -> None:
    conn = ScriptedConnection()
    link = make_link(conn)
    await link.ensure_started()
    try:
        with pytest.raises(UpstreamError) as caught:
            await request(link, conn, frame, related=True)
        assert caught.value.reason is UpstreamFailure.INVALID_ANSWER
        assert await request(link, conn, ok)  # the link goes on
    finally:
        await link.close()


async def test_repeated_invalid_answers_restart_the_link() -> None:
    conn = ScriptedConnection()
    link = make_link(conn)
    await link.ensure_started()
    try:
        for _ in range(INVALID_ANSWERS_BEFORE_RESTART):
            with pytest.raises(UpstreamError):
                await request(link, conn, lambda rid: {"jsonrpc": "2.0", "id": rid, "result": 0})
        assert link.last_failure is UpstreamFailure.INVALID_ANSWER
        await asyncio.wait_for(link.ensure_started(), HANG_GUARD_S)
        assert conn.starts == 2
    finally:
        await link.close()


async def test_a_reader_that_dies_marks_the_link_down_and_it_restarts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conn = ScriptedConnection()
    link = make_link(conn)
    real_loop = link._read_loop
    calls = 0

    async def dying_then_real() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a bug in the reader")
        await real_loop()

    link._read_loop = dying_then_real  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="mcpward.relay"):
        await link.ensure_started()
        for _ in range(1000):  # the callback runs on the next turns of the loop
            if link.state is not LinkState.UP or conn.starts > 1:
                break
            await asyncio.sleep(0.005)
        try:
            await asyncio.wait_for(link.ensure_started(), HANG_GUARD_S)
            assert conn.starts == 2 and link.up
            assert await request(link, conn, ok)
        finally:
            await link.close()
    stopped = [r for r in caplog.records if "reader stopped (RuntimeError)" in r.getMessage()]
    assert len(stopped) == 1 and stopped[0].levelno == logging.ERROR


async def test_malformed_notifications_are_dropped_and_requests_refused() -> None:
    conn = ScriptedConnection()
    received: list[dict[str, Any]] = []
    link = make_link(conn, received)
    await link.ensure_started()
    try:
        bad = [
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": []}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": "text"},
            {"jsonrpc": "2.0", "method": 5},
            {"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": {"_meta": 1}},
        ]
        good = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        for frame in [*bad, good]:
            conn.inbox.put_nowait((frame, None))
        assert await request(link, conn, ok)
        assert received == [good]
        refused = [m for m in conn.sent if m.get("id") == 9]
        assert refused and refused[0]["error"]["code"] == -32600
    finally:
        await link.close()


async def test_down_connection_is_still_reported_as_before() -> None:
    conn = ScriptedConnection()
    link = make_link(conn)
    await link.ensure_started()
    try:
        conn.inbox.put_nowait(UpstreamUnavailable(UpstreamFailure.CRASHED, "exited"))

        async def restarted() -> None:
            while conn.starts < 2:  # the reader takes the failure on its own turn
                await asyncio.sleep(0.01)
            await link.ensure_started()

        await asyncio.wait_for(restarted(), HANG_GUARD_S)
        assert conn.starts == 2 and link.up
    finally:
        await link.close()


# ---- the judged call's incident receipt --------------------------------------------------


class FailingJudge(JudgedCalls):
    def __init__(self, opened_with: DecisionRecord | None, record: Any) -> None:
        self.state = SimpleNamespace(session_id="s1", identity=None)  # type: ignore[assignment]
        self.record = record
        self.tracer = None
        self._opened_with = opened_with

    async def _judge(self, message: Any, opened: list[DecisionRecord]) -> Any:
        if self._opened_with is not None:
            opened.append(self._opened_with)
        raise KeyError("a value the client sent")


def strict_recorder(into: list[DecisionRecord]) -> Any:
    async def record(rec: DecisionRecord) -> None:
        payload_hashes(rec)  # as the ledger does: raises on a payload that is not JSON
        into.append(rec)

    return record


@pytest.mark.parametrize("opened", [False, True])
async def test_an_internal_failure_is_answered_with_an_incident_and_recorded(
    opened: bool, caplog: pytest.LogCaptureFixture
) -> None:
    recorded: list[DecisionRecord] = []
    record = DecisionRecord(
        started_at=1.0,
        method="tools/call",
        upstream="u",
        name="t",
        decision="allow",
        arguments={"s": "\ud800", "n": 12345678901234567890},  # cannot be hashed
    )
    judge = FailingJudge(record if opened else None, strict_recorder(recorded))
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t"}}
    with caplog.at_level(logging.INFO, logger="mcpward.relay"):
        reply = await judge.judge(message)
    error = reply["error"]
    assert error["code"] == -32012 and reply["id"] == 7
    incident = error["data"]["incident"]
    (receipt,) = recorded
    assert receipt.error_reason == f"incident_{incident}"
    assert receipt.error_code == -32012 and receipt.decision == "error"
    assert receipt.name == "t" and receipt.arguments is None
    lines = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1 and incident in lines[0].getMessage()
    assert "KeyError" in lines[0].getMessage() and lines[0].exc_info is None
    assert "a value the client sent" not in caplog.text


# ---- with_warnings, the checks, the limiter ------------------------------------------------


@pytest.mark.parametrize("meta", ["a string", ["a", "list"], 5, None, {"keep": 1}])
def test_with_warnings_takes_any_meta_shape(meta: Any) -> None:
    result = {"content": [{"type": "text", "text": "x"}], "_meta": meta}
    warned = with_warnings(result, ["injection"], "tools/call")
    assert warned["_meta"]["dev.mcpward/warnings"] == ["injection"]
    if isinstance(meta, dict):
        assert warned["_meta"]["keep"] == 1
    assert warned["content"][-1]["text"] == "[mcpward warning] injection"


def test_the_frame_checks_name_the_problem_without_values() -> None:
    secret = "ghp_" + "x" * 36
    for message in (
        {"jsonrpc": "2.0", "id": 1, "result": secret},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": [secret]}},
        {"jsonrpc": "2.0", "id": [secret], "result": {}},
    ):
        _frame, problem = upstream_frames.check(message)
        assert problem is not None and secret not in problem
    assert upstream_frames.check({"jsonrpc": "2.0", "id": 1, "result": {}})[1] is None
    assert upstream_frames.check({"jsonrpc": "2.0", "id": 1, "result": {"_meta": None}})[1] is None
    assert (
        upstream_frames.check({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": ""}})[1]
        is None
    )


def test_the_limited_log_allows_n_lines_a_window_then_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    limited = LimitedLog(
        logging.getLogger("test.limits"), per_window=3, window_s=60.0, clock=lambda: now[0]
    )
    with caplog.at_level(logging.WARNING, logger="test.limits"):
        logged = [limited.log(logging.WARNING, "u", "bad", "line %d", i) for i in range(100)]
        assert logged.count(True) == 3
        assert len(caplog.records) == 4  # three lines and "suppressing the rest"
        limited.log(logging.WARNING, "u", "other", "another kind")  # its own budget
        assert len(caplog.records) == 5
        now[0] = 61.0
        limited.log(logging.WARNING, "u", "bad", "line again")
    messages = [r.getMessage() for r in caplog.records]
    assert "u: 97 more bad lines were suppressed" in messages
    assert messages[-1] == "line again"


# ---- a process shared by several sessions --------------------------------------------------


async def test_a_shared_process_reader_survives_a_frame_it_cannot_route() -> None:
    conn = ScriptedConnection()
    process = SharedProcess(conn)
    gone: list[SharedProcess] = []
    process.on_gone = gone.append
    process.alive = True
    lease = SharedLease("scripted", "d", attach=None)  # type: ignore[arg-type]
    process.leases.add(lease)
    process._reader = asyncio.create_task(process._read_loop())
    try:
        await process.send(lease, {"jsonrpc": "2.0", "id": "L1", "method": "tools/call"})
        ours = conn.sent[-1]["id"]
        for frame in (
            {"jsonrpc": "2.0", "id": [ours], "result": {}},
            {"jsonrpc": "2.0", "id": {"a": ours}, "result": {}},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": []}},
            {"jsonrpc": "2.0", "id": ours, "result": {"content": []}},
        ):
            conn.inbox.put_nowait((frame, None))
        lease.process = process
        answer = await asyncio.wait_for(lease.receive(), HANG_GUARD_S)
        assert answer == {"jsonrpc": "2.0", "id": "L1", "result": {"content": []}}
        assert not gone and not process._reader.done()
    finally:
        process._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await process._reader


async def test_a_list_that_fails_inside_the_gateway_is_recorded_with_its_incident() -> None:
    class FailingList(ListRelay):
        async def _handle(self, message: Any) -> Any:
            raise ValueError("a tool description the upstream sent")

    recorded: list[DecisionRecord] = []
    relay = FailingList.__new__(FailingList)
    relay.state = SimpleNamespace(session_id="s1", identity=None)  # type: ignore[assignment]
    relay.record = strict_recorder(recorded)
    reply = await relay.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    incident = reply["error"]["data"]["incident"]
    (receipt,) = recorded
    assert receipt.method == "tools/list" and receipt.error_reason == f"incident_{incident}"


# ---- generated answers -----------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
ANSWER_KEYS = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", None, 2]) | JSON,
        "result": JSON | st.fixed_dictionaries({}, optional={"_meta": JSON, "content": JSON}),
        "error": JSON
        | st.fixed_dictionaries(
            {}, optional={"code": JSON | st.integers(), "message": JSON, "data": JSON}
        ),
    },
)


def strictly_valid(answer: dict[str, Any]) -> bool:
    if answer.get("jsonrpc") != "2.0" or ("result" in answer) == ("error" in answer):
        return False
    if "result" in answer:
        result = answer["result"]
        return isinstance(result, dict) and (
            result.get("_meta") is None or isinstance(result["_meta"], dict)
        )
    error = answer["error"]
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error["code"], bool)
        and isinstance(error.get("message"), str)
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=ANSWER_KEYS,
    id_kind=st.sampled_from(["ours", "other", "json", "absent"]),
    extra_id=JSON,
)
def test_any_answer_either_passes_valid_or_fails_its_call(
    keys: dict[str, Any], id_kind: str, extra_id: Any
) -> None:
    """After any answer the reader lives, and the call got a valid answer or invalid_answer."""

    async def scenario() -> None:
        conn = ScriptedConnection()
        link = make_link(conn)
        await link.ensure_started()
        try:

            def frames(rid: int) -> dict[str, Any]:
                ids = {"ours": rid, "other": rid + 1000, "json": extra_id}
                answer = {**keys, **({"id": ids[id_kind]} if id_kind in ids else {})}
                # then a valid answer: it settles the call if the first was dropped
                conn.inbox.put_nowait((answer, rid))
                return {"jsonrpc": "2.0", "id": rid, "result": {"sentinel": True}}

            answering = asyncio.ensure_future(answer_when_sent(conn, frames))
            try:
                reply = await asyncio.wait_for(link.request_raw("tools/call", {}), HANG_GUARD_S)
            except UpstreamError as exc:
                assert exc.reason is UpstreamFailure.INVALID_ANSWER
            else:
                if reply.get("result") != {"sentinel": True}:  # the first answer was taken
                    assert strictly_valid(reply) and reply["id"] == conn.sent[-1]["id"]
            finally:
                await answering
            assert link._reader is not None and not link._reader.done()
            assert await request(link, conn, ok)  # and the next call is answered
        finally:
            await link.close()

    asyncio.run(scenario())
