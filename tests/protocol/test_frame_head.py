"""The id of a frame too large to parse: only the top-level "id" of a request, read exactly."""

from __future__ import annotations

import json

import pytest

from mcpward.protocol.frame_head import HEAD_BYTES, peek_head

PAD = "x" * 9000


def _head_and_tail(message: dict) -> tuple[bytes, bytes]:
    data = json.dumps(message, separators=(",", ":")).encode()
    return data[:HEAD_BYTES], data[-HEAD_BYTES:]


def test_a_request_id_at_the_top_level_is_read() -> None:
    head, tail = _head_and_tail(
        {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"a": PAD}}
    )
    peek = peek_head(head, tail)
    assert (peek.request_id, peek.has_method) == (42, True)


def test_a_notification_whose_params_hold_an_id_gets_none() -> None:
    head, tail = _head_and_tail(
        {"jsonrpc": "2.0", "method": "notifications/x", "params": {"id": 42, "a": PAD}}
    )
    peek = peek_head(head, tail)
    assert peek.request_id is None and peek.top_level_id is None


def test_an_id_after_the_head_is_read_from_the_tail() -> None:
    head, tail = _head_and_tail(
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"id": 5, "a": PAD}, "id": 78}
    )
    assert peek_head(head, tail).request_id == 78


def test_a_nested_id_at_the_very_end_is_not_taken() -> None:
    head, tail = _head_and_tail(
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"a": PAD, "id": 5}}
    )
    assert peek_head(head, tail).request_id is None


def test_string_ids_are_unescaped() -> None:
    head = b'{"jsonrpc":"2.0","id":"a\\"b\\u00e9","method":"x","params":{"a":"' + b"y" * 5000
    assert peek_head(head).request_id == 'a"b\u00e9'


@pytest.mark.parametrize(
    "head",
    [
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"x","params":{"a":"' + b"y" * 5000,
        b'{"jsonrpc":"2.0","id":1.5,"method":"x","params":{"a":"' + b"y" * 5000,
        b'{"jsonrpc":"2.0","id":true,"method":"x","params":{"a":"' + b"y" * 5000,
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"x","params":{"a":"' + b"y" * 5000,
        b'{"jsonrpc":"2.0","method":"x","params":{"a":"' + b"y" * 5000 + b'"},"id":12',  # cut
        b'{"jsonrpc":"2.0","id":42,"params":{"a":"' + b"y" * 5000,  # no method: not a request
        b'[{"jsonrpc":"2.0","id":42,"method":"x"}]',
        b'{"jsonrpc" "2.0","id":42,"method":"x"}',  # not JSON
        b'{"a":"\\"id\\":42","method":"x","params":{"b":"' + b"y" * 5000,
    ],
)
def test_an_id_that_cannot_be_read_exactly_is_none(head: bytes) -> None:
    assert peek_head(head[:HEAD_BYTES]).request_id is None


def test_a_response_id_is_kept_for_the_upstream_side() -> None:
    head, tail = _head_and_tail({"jsonrpc": "2.0", "id": 9, "result": {"a": PAD}})
    peek = peek_head(head, tail)
    assert (peek.top_level_id, peek.request_id) == (9, None)
