"""A message the serialiser cannot write: an answer becomes -32012 for its id, anything else is
dropped; nothing raises (the HTTP front used to keep such an answer's stream open for ever)."""

from __future__ import annotations

import json

from mcpward.protocol import jsonrpc
from mcpward.protocol.outgoing import encode_outgoing


def test_an_answer_that_cannot_be_written_becomes_an_internal_error_for_its_id() -> None:
    encoded = encode_outgoing(jsonrpc.result(7, {"text": "\ud800", "n": 10**30}))
    assert encoded is not None
    message, data = encoded
    assert json.loads(data) == message
    assert message["id"] == 7 and message["error"]["code"] == -32012
    assert set(message["error"]["data"]) == {"incident"}


def test_a_notification_or_request_that_cannot_be_written_is_dropped() -> None:
    assert encode_outgoing(jsonrpc.notification("x/y", {"a": "\udc00"})) is None
    assert encode_outgoing(jsonrpc.request(3, "x/y", {"a": "\udc00"})) is None


def test_what_can_be_written_leaves_unchanged() -> None:
    message = jsonrpc.result("r", {"n": 10**30, "text": "é"})
    assert encode_outgoing(message) == (message, jsonrpc.dumps(message))
