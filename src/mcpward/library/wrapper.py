"""`guarded(session, ...)`: the gateway in-process, in front of an `mcp` SDK client session.

The wrapper is a front like stdio and HTTP: it feeds JSON-RPC requests to a relay session of a
real `Gateway`, whose one upstream is the application's own SDK session. Pins, guards, holds and
receipts are the gateway's; nothing is decided here.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import types
from mcp.client.session import ClientSession

from mcpward.config import load_config, parse_config
from mcpward.config.loader import LoadedConfig
from mcpward.library.connection import SdkSessionConnection
from mcpward.library.errors import error_from
from mcpward.pipeline.context import Identity
from mcpward.protocol import jsonrpc, methods
from mcpward.protocol.eras import LATEST_HANDSHAKE
from mcpward.protocol.jsonrpc import Message, RequestId
from mcpward.relay.gateway import Gateway
from mcpward.relay.session import Session

ConfigSource = LoadedConfig | Mapping[str, Any] | Path | str | None
CLIENT_INFO = {"name": "mcpward-library", "version": "1"}


class GuardedSession:
    """The SDK session's calls, through the gateway. Use `guarded(...)` to make one."""

    def __init__(self, gateway: Gateway, upstream_id: str) -> None:
        self.gateway = gateway
        self.upstream_id = upstream_id
        self._relay: Session | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[RequestId, asyncio.Future[Message]] = {}

    # -- the relay session's Downstream -------------------------------------------------------

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        if "method" in message:
            return  # notifications and server requests: the wrapper declares no capability
        future = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(message)

    # -- lifecycle ------------------------------------------------------------------------------

    async def open(self, identity: Identity | None) -> None:
        self._relay = await self.gateway.open_session(self, identity, None)
        await self.request(
            methods.INITIALIZE,
            {"protocolVersion": LATEST_HANDSHAKE, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        await self._relay.handle(jsonrpc.classify(jsonrpc.notification(methods.INITIALIZED, None)))

    async def close(self) -> None:
        if self._relay is not None:
            await self.gateway.close_session(self._relay)
            self._relay = None
        await self.gateway.close()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One JSON-RPC request through the gateway; its result, or the matching MCPWardError."""
        if self._relay is None:
            raise RuntimeError("the guarded session is not open (use `async with guarded(...)`)")
        request_id = next(self._ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        await self._relay.handle(jsonrpc.classify(jsonrpc.request(request_id, method, params)))
        try:
            reply = await future
        finally:
            self._waiting.pop(request_id, None)
        if "error" in reply:
            raise error_from(reply["error"])
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    # -- the SDK session's calls ------------------------------------------------------------------

    async def list_tools(self, cursor: str | None = None) -> types.ListToolsResult:
        raw = await self.request(methods.TOOLS_LIST, _cursor(cursor))
        return types.ListToolsResult.model_validate(raw, by_name=False)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> types.CallToolResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        raw = await self.request(methods.TOOLS_CALL, params)
        return types.CallToolResult.model_validate(raw, by_name=False)

    async def list_prompts(self, cursor: str | None = None) -> types.ListPromptsResult:
        raw = await self.request(methods.PROMPTS_LIST, _cursor(cursor))
        return types.ListPromptsResult.model_validate(raw, by_name=False)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> types.GetPromptResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        raw = await self.request(methods.PROMPTS_GET, params)
        return types.GetPromptResult.model_validate(raw, by_name=False)

    async def list_resources(self, cursor: str | None = None) -> types.ListResourcesResult:
        raw = await self.request(methods.RESOURCES_LIST, _cursor(cursor))
        return types.ListResourcesResult.model_validate(raw, by_name=False)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        raw = await self.request(methods.RESOURCES_READ, {"uri": uri})
        return types.ReadResourceResult.model_validate(raw, by_name=False)


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


def _loaded(config: ConfigSource, upstream_id: str) -> LoadedConfig:
    """The gateway config, with `upstream_id` declared (its entry is never started: the SDK
    session stands in for it)."""
    if isinstance(config, (Path, str)):
        config = load_config(config)
    if isinstance(config, LoadedConfig):
        if any(u.id == upstream_id for u in config.config.upstreams):
            return config
        data = config.config.model_dump(mode="json", exclude_unset=True)
    else:
        data = dict(config or {})
    upstreams = list(data.get("upstreams") or [])
    if not any(isinstance(u, dict) and u.get("id") == upstream_id for u in upstreams):
        stand_in = {"id": upstream_id, "command": "in-process", "restart": {"enabled": False}}
        upstreams.append(stand_in)
    data["upstreams"] = upstreams
    data.setdefault("version", 1)
    return parse_config(data, source=f"<guarded {upstream_id}>")


@asynccontextmanager
async def guarded(
    session: ClientSession,
    *,
    upstream_id: str,
    config: ConfigSource = None,
    identity: Identity | None = None,
) -> AsyncIterator[GuardedSession]:
    """The gateway in front of an initialized SDK `ClientSession`, for the `async with` block.

    `config` is a gateway config (a `LoadedConfig`, a mapping as in YAML, or a file path); by
    default the built-in guards with the state dir of the CLI. Calls raise `ContractHeld`
    (-32010), `CallDenied` (-32013), `UpstreamUnavailable` (-32011) or `GatewayInternalError`.
    """
    loaded = _loaded(config, upstream_id)
    gateway = await Gateway.start(
        loaded, connections={upstream_id: lambda: SdkSessionConnection(upstream_id, session)}
    )
    wrapper = GuardedSession(gateway, upstream_id)
    try:
        await wrapper.open(identity or Identity(sub=str(os.getuid()), client_id="library"))
        yield wrapper
    finally:
        await wrapper.close()


wrap = guarded
