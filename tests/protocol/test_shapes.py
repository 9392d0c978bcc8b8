"""The MCP shapes checked in `classify`: a bad request is answered with its id, a bad
notification is marked to be dropped; good frames pass unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from mcpward.protocol import jsonrpc
from mcpward.protocol.jsonrpc import FrameError, FrameKind


def _notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


BAD_NOTIFICATIONS = [
    _notification("notifications/cancelled", {"requestId": [1]}),
    _notification("notifications/cancelled", {"requestId": {"a": 1}}),
    _notification("notifications/cancelled", {"requestId": True}),
    _notification("notifications/cancelled", {"requestId": 1.5}),
    _notification("notifications/cancelled", {"requestId": 1, "reason": 7}),
    {"jsonrpc": "2.0", "method": "notifications/cancelled"},
    _notification("notifications/progress", {"progressToken": {"a": 1}, "progress": 1}),
    _notification("notifications/progress", {"progressToken": [1], "progress": 1}),
    _notification("notifications/progress", {"progressToken": "t", "progress": "half"}),
    _notification("notifications/progress", {"progressToken": "t"}),
    _notification("notifications/progress", {"progressToken": "t", "progress": 1, "total": "9"}),
    _notification("notifications/progress", {"progressToken": "t", "progress": True}),
    _notification("notifications/resources/updated", {"uri": 3}),
    _notification("notifications/message", {"data": "x"}),
    _notification("notifications/anything", {"_meta": "not an object"}),
    _notification("notifications/anything", [1, 2]),
    {"jsonrpc": "2.0", "method": ""},
    # a request method with its id left out would reach a server past the judged path
    _notification("tools/call", {"name": "delete_all", "arguments": {}}),
    _notification("prompts/get", {"name": "p"}),
    _notification("resources/read", {"uri": "file:///etc/passwd"}),
    _notification("sampling/createMessage", {}),
    {"jsonrpc": "2.0", "method": "ping"},
]


@pytest.mark.parametrize("message", BAD_NOTIFICATIONS)
def test_a_bad_notification_is_marked_to_be_dropped(message: dict[str, Any]) -> None:
    with pytest.raises(FrameError) as caught:
        jsonrpc.classify(message)
    assert caught.value.notification and caught.value.request_id is None


GOOD_NOTIFICATIONS = [
    _notification("notifications/cancelled", {"requestId": 7, "reason": "user"}),
    _notification("notifications/cancelled", {"requestId": "abc"}),
    _notification("notifications/cancelled", {}),  # 2025-11-25: requestId is optional (tasks)
    _notification("notifications/progress", {"progressToken": "t", "progress": 0.5, "total": 1}),
    _notification("notifications/progress", {"progressToken": 12345678901234567890, "progress": 1}),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    _notification("notifications/anything", {"_meta": {"x": [1]}, "free": {"shape": 1}}),
    _notification("vendor/custom_note", {"n": 1}),  # a vendor's own notification passes
]


@pytest.mark.parametrize("message", GOOD_NOTIFICATIONS)
def test_a_good_notification_passes(message: dict[str, Any]) -> None:
    assert jsonrpc.classify(message).kind is FrameKind.NOTIFICATION


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", {"name": "x", "_meta": {"progressToken": [1]}}),
        ("tools/call", {"name": "x", "_meta": {"progressToken": False}}),
        ("tools/list", {"_meta": {"progressToken": {"a": 1}}}),
        ("tools/list", {"_meta": []}),
        ("tools/call", {"name": 3}),
        ("tools/call", {"name": "x", "arguments": [1]}),
        ("tools/call", None),
        ("prompts/get", {"name": "p", "arguments": "a"}),
        ("resources/read", {"uri": None}),
        ("resources/read", {}),
    ],
)
def test_a_request_of_the_wrong_shape_is_invalid_params_with_its_id(
    method: str, params: dict[str, Any] | None
) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": "r1", "method": method}
    if params is not None:
        message["params"] = params
    with pytest.raises(FrameError) as caught:
        jsonrpc.classify(message)
    assert (caught.value.code, caught.value.request_id, caught.value.notification) == (
        -32602,
        "r1",
        False,
    )


@pytest.mark.parametrize("bad_id", [True, 1.0, [1], {"a": 1}, None])
def test_a_request_id_is_a_string_or_an_integer(bad_id: Any) -> None:
    with pytest.raises(FrameError) as caught:
        jsonrpc.classify({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
    assert caught.value.code == -32600 and caught.value.request_id is None


def test_good_requests_and_responses_pass() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "x", "arguments": {"a": 1}, "_meta": {"progressToken": "p"}},
    }
    assert jsonrpc.classify(call).kind is FrameKind.REQUEST
    assert jsonrpc.classify({"jsonrpc": "2.0", "id": 1, "result": {"_meta": {}}}).kind is (
        FrameKind.RESPONSE
    )


@pytest.mark.parametrize("result", ["text", [1], 0, {"_meta": "x"}, {"_meta": [1]}])
def test_a_result_is_an_object_with_an_object_meta(result: Any) -> None:
    with pytest.raises(FrameError) as caught:
        jsonrpc.classify({"jsonrpc": "2.0", "id": 3, "result": result})
    assert caught.value.code == -32600 and caught.value.request_id == 3
