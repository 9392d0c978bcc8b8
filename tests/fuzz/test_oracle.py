"""The fuzzer's judge, checked on hand-written frames (a wrong oracle would hide or invent bugs)."""

from __future__ import annotations

import json

import pytest

from tests.fuzz import oracle
from tests.fuzz.runner import match_slot, with_modern_meta
from tests.fuzz.strategies import Raw, encode, padded, to_bytes

NULL = oracle.NULL
CAP = 4096


def slot(frame: bytes, http: bool = False) -> oracle.Slot | None:
    return oracle.client_slot(frame, CAP, http=http)


def test_a_clean_request_is_owed_one_answer_with_its_own_id() -> None:
    found = slot(b'{"jsonrpc":"2.0","id":7,"method":"ping"}')
    assert found is not None and found.required and found.accept == {("int", 7)}
    assert match_slot(found, [{"id": 7}]) is None
    assert match_slot(found, [{"id": "7"}]) is not None  # "7" is not 7
    assert match_slot(found, [{"id": 7}, {"id": 7}]) is not None
    assert match_slot(found, []) is not None


def test_a_clean_notification_must_not_be_answered() -> None:
    assert slot(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}') is None
    assert match_slot(None, [{"id": None}]) is not None


@pytest.mark.parametrize(
    "frame",
    [b"{", b"[]", b"5", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', b"NaN"],
)
def test_unreadable_frames_are_answered_with_null(frame: bytes) -> None:
    found = slot(frame)
    assert found is not None and found.required and found.accept == {NULL}


def test_ambiguous_requests_may_be_answered_with_their_id_or_null() -> None:
    surrogate = b'{"jsonrpc":"2.0","id":"a","method":"ping","params":{"s":"\\ud800"}}'
    found = slot(surrogate)
    assert found is not None and found.accept == {("str", "a"), NULL}


def test_an_oversized_frame_may_not_be_answered_with_an_id_from_its_params() -> None:
    frame = padded({"jsonrpc": "2.0", "method": "x", "params": {"id": 42}}, CAP + 1)
    assert len(frame) == CAP + 1
    found = slot(frame)
    assert found is not None and found.accept == {NULL}
    assert match_slot(found, [{"id": 42}]) is not None


def test_a_blank_body_is_a_frame_over_http_only() -> None:
    assert slot(b" \t") is None
    found = slot(b" \t", http=True)
    assert found is not None and found.accept == {NULL}


def test_deep_frames_are_readable_beyond_pythons_default_limit() -> None:
    deep = encode(
        {"jsonrpc": "2.0", "method": "x", "params": Raw('{"a":' * 1100 + "1" + "}" * 1100)}
    )
    found = oracle.client_slot(to_bytes(deep), 1 << 20)
    assert found is not None and not found.required  # a notification; too deep to be sure


@pytest.mark.parametrize(
    ("message", "valid"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, True),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}, True),
        ({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, True),
        ({"jsonrpc": "2.0", "id": 1, "result": "text"}, False),
        ({"id": 1, "result": {}}, False),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": ""}}, False),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": None, "message": ""}}, False),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": 5}}, False),
        ({"jsonrpc": "2.0", "id": [1], "result": {}}, False),
    ],
)
def test_what_the_gateway_sends_must_be_valid_json_rpc(message: object, valid: bool) -> None:
    assert (oracle.message_problems(message) == []) is valid


def test_planted_credentials_are_found_raw_and_escaped() -> None:
    key = "AKIA" + "QWERTYUIOPASDFGH"
    assert oracle.leaked_credentials(f'"{key}"'.encode(), None) == [key]
    escaped = b'{"k":"\\u0041KIA' + key[4:].encode() + b'"}'  # an escape hides it in the bytes
    value, _ = oracle.read_sent(escaped)
    assert oracle.PLANTED.search(escaped) is None
    assert oracle.leaked_credentials(escaped, value) == [key]


def test_modern_meta_is_added_to_object_params() -> None:
    body, method, name = with_modern_meta(
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'
    )
    parsed = json.loads(body)
    assert method == "tools/call" and name == "echo"
    assert parsed["params"]["name"] == "echo" and "_meta" in parsed["params"]
    empty, _, _ = with_modern_meta(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}')
    assert "_meta" in json.loads(empty)["params"]
