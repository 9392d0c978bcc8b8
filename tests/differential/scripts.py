"""The scripted sessions: the same requests, in the same order, against each target.

Each server's script touches every feature the server offers whose outcome is deterministic;
what it leaves out, and why, is said next to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client, types

from tests.differential.recorder import Recorder

Script = Callable[[Client, Recorder], Awaitable[None]]


def client_callbacks(recorder: Recorder) -> dict[str, Any]:
    """Sampling, elicitation and roots handlers that record what the server asked and answer the
    same fixed thing every time (server-everything lists some tools only to such clients)."""

    async def sampling(_ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        recorder.saw("sampling/createMessage", params)
        text = types.TextContent(type="text", text="a fixed completion")
        return types.CreateMessageResult(role="assistant", content=text, model="differential")

    async def elicitation(_ctx: Any, params: Any) -> types.ElicitResult:
        recorder.saw("elicitation/create", params)
        return types.ElicitResult(action="decline")

    async def roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project", name="project")])  # type: ignore[arg-type]

    return {
        "sampling_callback": sampling,
        "elicitation_callback": elicitation,
        "list_roots_callback": roots,
    }


def record_handshake(client: Client, recorder: Recorder) -> None:
    recorder.note("protocol_version", client.protocol_version)
    recorder.note("server_info", client.server_info)
    recorder.note("capabilities", client.server_capabilities)
    recorder.note("instructions", client.instructions)


async def record_lists(client: Client, recorder: Recorder) -> None:
    await recorder.step("tools/list", client.list_tools())
    await recorder.step("prompts/list", client.list_prompts())
    await recorder.step("resources/list", client.list_resources())
    await recorder.step("resources/templates/list", client.list_resource_templates())


async def wait_for_tool(client: Client, name: str, timeout: float = 20.0) -> None:
    """server-everything registers its capability-dependent tools after the handshake."""
    async with asyncio.timeout(timeout):
        while name not in {tool.name for tool in (await client.list_tools()).tools}:
            await asyncio.sleep(0.1)


async def everything(client: Client, recorder: Recorder) -> None:
    """server-everything (handshake era). Left out: get-env (the process environment is the
    launcher's, not the protocol's), gzip-file-as-resource (fetches a URL), the toggles and
    simulated logging (timer-driven, so their timing is not the server's answer), and the
    tasks-based tools (mcpward removes `tasks`, a documented difference)."""
    record_handshake(client, recorder)
    await wait_for_tool(client, "trigger-sampling-request")
    await recorder.step("ping", client.send_ping())
    await record_lists(client, recorder)

    def progress(label: str) -> Any:
        async def callback(value: float, total: float | None, message: str | None) -> None:
            recorder.saw(label, {"progress": value, "total": total, "message": message})

        return callback

    calls: list[tuple[str, dict[str, Any]]] = [
        ("echo", {"message": "hello through the gateway"}),
        ("echo", {}),
        ("get-sum", {"a": 2, "b": 3.5}),
        ("get-tiny-image", {}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("get-resource-links", {"count": 2}),
        ("get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
        ("get-structured-content", {"location": "Chicago"}),
        ("get-roots-list", {}),
        ("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 7}),
        ("trigger-elicitation-request", {}),
        ("no-such-tool", {}),
    ]
    for name, arguments in calls:
        await recorder.step(f"tools/call {name}", client.call_tool(name, arguments))
    await recorder.step(
        "tools/call trigger-long-running-operation",
        client.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress_callback=progress("notifications/progress"),
        ),
    )
    prompts: list[tuple[str, dict[str, str] | None]] = [
        ("simple-prompt", None),
        ("args-prompt", {"city": "Paris", "state": "TX"}),
        ("resource-prompt", {"resourceType": "Text", "resourceId": "2"}),
        ("args-prompt", {}),
        ("no-such-prompt", None),
    ]
    for name, args in prompts:
        await recorder.step(f"prompts/get {name}", client.get_prompt(name, args))
    uris = [
        "demo://resource/static/document/architecture.md",
        "demo://resource/dynamic/text/1",
        "demo://resource/dynamic/blob/2",
        "demo://resource/no-such-thing",
    ]
    for uri in uris:
        await recorder.step(f"resources/read {uri}", client.read_resource(uri))
    prompt = types.PromptReference(type="ref/prompt", name="completable-prompt")
    await recorder.step(
        "completion/complete department",
        client.complete(prompt, {"name": "department", "value": "E"}),
    )
    await recorder.step(
        "completion/complete name",
        client.complete(prompt, {"name": "name", "value": ""}, {"department": "Engineering"}),
    )
    uri = "demo://resource/dynamic/text/1"
    await recorder.step("resources/subscribe", client.subscribe_resource(uri))
    await recorder.step("resources/unsubscribe", client.unsubscribe_resource(uri))
    await recorder.step("logging/setLevel", client.set_logging_level("error"))


async def time_server(client: Client, recorder: Recorder) -> None:
    """mcp-server-time (both eras): every tool, its refusals, and the lists it does not offer."""
    record_handshake(client, recorder)
    if client.protocol_version < "2026":
        await recorder.step("ping", client.send_ping())
    await record_lists(client, recorder)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_current_time", {"timezone": "UTC"}),
        ("get_current_time", {"timezone": "Not/AZone"}),
        ("get_current_time", {}),
        (
            "convert_time",
            {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"},
        ),
        ("convert_time", {"source_timezone": "UTC", "time": "25:99", "target_timezone": "UTC"}),
        ("no_such_tool", {}),
    ]
    for name, arguments in calls:
        await recorder.step(f"tools/call {name}", client.call_tool(name, arguments))
