"""An answer the serialiser cannot write still ends its request's stream (issue 23 item 2: the
HTTP front kept a 200 SSE stream open for ever): it leaves as -32012 for its id."""

from __future__ import annotations

import json

from mcpward.fronts.http.legacy import LegacySession, stream_key
from mcpward.fronts.http.mailbox import Mailbox
from mcpward.pipeline.context import Identity
from mcpward.protocol import jsonrpc


async def test_an_unwritable_answer_reaches_its_stream_as_an_internal_error() -> None:
    session = LegacySession("sid", "binding", Identity(sub="tester"))
    key = stream_key(7)
    session.pending.add(key)
    queue: Mailbox = Mailbox()
    session.live[key] = queue
    await session.send(jsonrpc.result(7, {"text": "\ud800", "n": 10**30}), None)
    _, data, final = queue.get_nowait()
    assert final and key not in session.pending
    answer = json.loads(data)
    assert answer["id"] == 7 and answer["error"]["code"] == -32012
