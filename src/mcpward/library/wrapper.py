"""`guarded(session, ...)`: the gateway in-process, in front of an `mcp` SDK client session.

The wrapper is a front like stdio and HTTP: it serialises each call to a JSON-RPC frame, parses
it as those fronts do, and hands it to a relay session of a real `Gateway` whose one upstream is
the application's own SDK session. Pins, guards, holds and receipts are the gateway's; nothing
is decided here.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar, overload

import mcp_types.methods as sdk_methods
from mcp import Client, types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from pydantic import BaseModel, TypeAdapter

from mcpward.library.assembly import (
    ConfigSource,
    ServerSource,
    gateway_config,
    local_identity,
    server_identity,
    server_name,
)
from mcpward.library.connection import SdkSessionConnection, check_session
from mcpward.library.errors import error_from
from mcpward.pipeline.context import Identity
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.eras import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)
from mcpward.protocol.jsonrpc import FrameKind, Message, RequestId
from mcpward.relay.gateway import Gateway
from mcpward.relay.session import Session

CLIENT_INFO = {"name": "mcpward-library", "version": "1"}

_CALL_TOOL = TypeAdapter[types.CallToolResult | types.InputRequiredResult](
    types.CallToolResult | types.InputRequiredResult
)
_GET_PROMPT = TypeAdapter[types.GetPromptResult | types.InputRequiredResult](
    types.GetPromptResult | types.InputRequiredResult
)
_READ_RESOURCE = TypeAdapter[types.ReadResourceResult | types.InputRequiredResult](
    types.ReadResourceResult | types.InputRequiredResult
)


_Listed = TypeVar("_Listed", bound=BaseModel)


class GuardedSession:
    """The SDK session's calls, through the gateway. Use `guarded(...)` to make one.

    Methods mirror `mcp.client.session.ClientSession` and return its types. A gateway refusal
    raises `ContractHeld`, `CallDenied`, `UpstreamUnavailable` or `GatewayInternalError`; an
    error the server answered raises `MCPError`, as the SDK does.
    """

    def __init__(
        self,
        gateway: Gateway,
        session: ClientSession,
        upstream_id: str,
        connections: list[SdkSessionConnection],
    ) -> None:
        self.gateway = gateway
        self.session = session
        self.upstream_id = upstream_id
        self._connections = connections  # those the gateway made over `session`
        self._relay: Session | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[RequestId, asyncio.Future[Message]] = {}
        self._progress: dict[RequestId, ProgressFnT] = {}
        self._callbacks: set[asyncio.Task[None]] = set()
        self._output_schemas: dict[str, dict[str, Any] | None] = {}
        self._validators: dict[str, tuple[str, Any]] = {}
        # The era the SDK session negotiated is the era the wrapper speaks to the gateway, so
        # receipts, guards and results see the same protocol the server is spoken to in.
        version = session.protocol_version
        self.protocol_version: str | None = version
        self._modern = version in MODERN_VERSIONS

    # -- the relay session's Downstream --------------------------------------------------------

    async def send(self, message: Message, related_request_id: RequestId | None) -> None:
        method = message.get("method")
        if method is None:
            future = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(message)
            return
        if "id" in message:
            # A server->client request never comes through (the SDK session answers those with
            # the application's own callbacks); refuse one rather than leave it waiting.
            if self._relay is not None:
                refusal = jsonrpc.error(
                    message["id"], errors.METHOD_NOT_FOUND, "not offered through mcpward.guarded"
                )
                await self._relay.handle(jsonrpc.classify(refusal))
            return
        if method == methods.PROGRESS:
            params = message.get("params") or {}
            token = params.get("progressToken")
            callback = self._progress.get(token) if isinstance(token, (str, int)) else None
            progress = params.get("progress")
            if callback is not None and isinstance(progress, (int, float)):
                total = params.get("total")
                text = params.get("message")
                task = asyncio.ensure_future(
                    callback(
                        float(progress),
                        float(total) if isinstance(total, (int, float)) else None,
                        text if isinstance(text, str) else None,
                    )
                )
                self._callbacks.add(task)
                task.add_done_callback(self._callbacks.discard)
        # Other notifications (list_changed above all) reach the application through its SDK
        # session's own handlers; the gateway has already acted on them.

    # -- lifecycle -----------------------------------------------------------------------------

    async def open(self, identity: Identity | None) -> None:
        """Open a relay session and do its handshake in the SDK session's era."""
        self._relay = await self.gateway.open_session(self, identity, None)
        if self._modern:
            await self.request(methods.DISCOVER)
            return
        await self.request(
            methods.INITIALIZE,
            {
                "protocolVersion": self.protocol_version,
                "capabilities": {},
                "clientInfo": dict(CLIENT_INFO),
            },
        )
        await self._relay.handle(jsonrpc.classify(jsonrpc.notification(methods.INITIALIZED)))

    async def close(self) -> None:
        relay, self._relay = self._relay, None
        try:
            if relay is not None:
                await self.gateway.close_session(relay)
        finally:
            await self.gateway.close()

    # -- the one way in ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """One JSON-RPC request through the gateway: its result dict, or the matching error.

        `timeout` (seconds) gives up like the SDK's `read_timeout_seconds`: the gateway cancels
        the request upstream and `MCPError(REQUEST_TIMEOUT)` is raised; cancelling the calling
        task cancels it upstream too.
        """
        relay = self._relay
        if relay is None:
            raise RuntimeError("the guarded session is not open (use `async with guarded(...)`)")
        request_id = next(self._ids)
        params = self._era_params(params)
        if progress_callback is not None:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
            self._progress[request_id] = progress_callback
        # Parse once, as the stdio and HTTP fronts do: what is judged is plain JSON, and it is
        # exactly what goes on to the server.
        frame = jsonrpc.parse_frame(jsonrpc.dumps(jsonrpc.request(request_id, method, params)))
        if frame.kind is not FrameKind.REQUEST:
            raise ValueError(f"not a valid request: {method!r}")
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            if method not in (methods.INITIALIZE, methods.DISCOVER):
                # A list_changed the SDK session has received is acted on before this request
                # is judged (the relay re-reads before the next judged call).
                for connection in self._connections:
                    await connection.settled()
            await relay.handle(frame)
            if timeout is None:
                reply = await future
            else:
                try:
                    reply = await asyncio.wait_for(asyncio.shield(future), timeout)
                except TimeoutError:
                    await self._cancel(relay, request_id, "timed out")
                    raise MCPError(
                        REQUEST_TIMEOUT, f"Request {method!r} timed out after {timeout}s"
                    ) from None
        except asyncio.CancelledError:
            await self._cancel(relay, request_id, "cancelled by the caller")
            raise
        finally:
            self._waiting.pop(request_id, None)
            self._progress.pop(request_id, None)
        if "error" in reply:
            raise error_from(reply["error"])
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def _cancel(self, relay: Session, request_id: RequestId, reason: str) -> None:
        cancel = jsonrpc.notification(
            methods.CANCELLED, {"requestId": request_id, "reason": reason}
        )
        await relay.handle(jsonrpc.classify(cancel))

    def _era_params(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """A 2026-07-28 request names its era in `_meta` (the relay reads it per message); the
        wrapper declares no client capability of its own (server->client requests never pass
        through it). The SDK session re-stamps its own before the request leaves."""
        if not self._modern:
            return params
        out = dict(params or {})
        meta = dict(out.get("_meta") or {})
        meta[META_PROTOCOL_VERSION] = self.protocol_version
        meta[META_CLIENT_CAPABILITIES] = {}
        meta[META_CLIENT_INFO] = dict(CLIENT_INFO)
        out["_meta"] = meta
        return out

    def _parse(self, method: str, raw: dict[str, Any], adapter: Any) -> Any:
        """The result as the SDK session would return it: validated against the negotiated
        version's schema, then parsed into the SDK's model (pydantic.ValidationError if not)."""
        version = self.protocol_version
        if version in KNOWN_PROTOCOL_VERSIONS:
            try:
                return sdk_methods.parse_server_result(method, version, raw)
            except KeyError:
                pass  # not a method of that version's surface: the plain model below
        if isinstance(adapter, TypeAdapter):
            return adapter.validate_python(raw, by_name=False)
        return adapter.model_validate(raw, by_name=False)

    # -- the SDK session's calls ---------------------------------------------------------------

    async def _listing(
        self,
        method: str,
        cursor: str | None,
        params: types.PaginatedRequestParams | None,
        model: type[_Listed],
    ) -> _Listed:
        """One page of a list method, parsed as the SDK parses it."""
        raw = await self.request(method, _page(cursor, params))
        result: _Listed = self._parse(method, raw, model)
        return result

    async def list_tools(
        self, cursor: str | None = None, *, params: types.PaginatedRequestParams | None = None
    ) -> types.ListToolsResult:
        result = await self._listing(methods.TOOLS_LIST, cursor, params, types.ListToolsResult)
        for tool in result.tools:
            self._output_schemas[tool.name] = tool.output_schema
        return result

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: Literal[False] = False,
    ) -> types.CallToolResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: bool,
    ) -> types.CallToolResult | types.InputRequiredResult: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: bool = False,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """`tools/call` through the gateway (pin gate, guards, receipt). As in the SDK, a
        structured result is checked against the tool's output schema, and an
        `InputRequiredResult` is returned only with `allow_input_required=True` (retry with
        `input_responses` and `request_state`: the retry is judged again)."""
        params = types.CallToolRequestParams(
            name=name,
            arguments=arguments,
            input_responses=input_responses,
            request_state=request_state,
            _meta=meta,
        )
        raw = await self.request(
            methods.TOOLS_CALL,
            _dump(params),
            timeout=read_timeout_seconds,
            progress_callback=progress_callback,
        )
        result = self._parse(methods.TOOLS_CALL, raw, _CALL_TOOL)
        if isinstance(result, types.CallToolResult) and not result.is_error:
            await self._check_output(name, result)
        return _terminal(result, "call_tool", allow_input_required)

    async def list_prompts(
        self, cursor: str | None = None, *, params: types.PaginatedRequestParams | None = None
    ) -> types.ListPromptsResult:
        return await self._listing(methods.PROMPTS_LIST, cursor, params, types.ListPromptsResult)

    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: Literal[False] = False,
    ) -> types.GetPromptResult: ...

    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: bool,
    ) -> types.GetPromptResult | types.InputRequiredResult: ...

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: bool = False,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        params = types.GetPromptRequestParams(
            name=name,
            arguments=arguments,
            input_responses=input_responses,
            request_state=request_state,
            _meta=meta,
        )
        raw = await self.request(methods.PROMPTS_GET, _dump(params))
        result = self._parse(methods.PROMPTS_GET, raw, _GET_PROMPT)
        return _terminal(result, "get_prompt", allow_input_required)

    async def list_resources(
        self, cursor: str | None = None, *, params: types.PaginatedRequestParams | None = None
    ) -> types.ListResourcesResult:
        model = types.ListResourcesResult
        return await self._listing(methods.RESOURCES_LIST, cursor, params, model)

    async def list_resource_templates(
        self, cursor: str | None = None, *, params: types.PaginatedRequestParams | None = None
    ) -> types.ListResourceTemplatesResult:
        model = types.ListResourceTemplatesResult
        return await self._listing(methods.RESOURCE_TEMPLATES_LIST, cursor, params, model)

    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: Literal[False] = False,
    ) -> types.ReadResourceResult: ...

    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: bool,
    ) -> types.ReadResourceResult | types.InputRequiredResult: ...

    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        meta: types.RequestParamsMeta | None = None,
        allow_input_required: bool = False,
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        params = types.ReadResourceRequestParams(
            uri=uri, input_responses=input_responses, request_state=request_state, _meta=meta
        )
        raw = await self.request(methods.RESOURCES_READ, _dump(params))
        result = self._parse(methods.RESOURCES_READ, raw, _READ_RESOURCE)
        return _terminal(result, "read_resource", allow_input_required)

    # -- output schemas, as ClientSession.validate_tool_result ----------------------------------

    async def _check_output(self, name: str, result: types.CallToolResult) -> None:
        if name not in self._output_schemas:
            await self.list_tools()  # as the SDK does; through the gateway, like any list
        schema = self._output_schemas.get(name)
        if schema is None:
            return
        if (
            result.structured_content is None
            and "structured_content" not in result.model_fields_set
        ):
            raise RuntimeError(
                f"Tool {name} has an output schema but did not return structured content"
            )
        from jsonschema import exceptions
        from referencing.exceptions import Unresolvable

        validator = self._validator(name, schema)
        try:
            error = exceptions.best_match(validator.iter_errors(result.structured_content))
        except Unresolvable as exc:
            raise RuntimeError(f"Invalid schema for tool {name}: {exc}") from exc
        if error is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {error}")

    def _validator(self, name: str, schema: dict[str, Any]) -> Any:
        """A compiled validator per tool and schema (compiling costs far more than checking)."""
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for
        from referencing import Registry

        key = json.dumps(schema, sort_keys=True)
        cached = self._validators.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        cls = validator_for(schema)
        try:
            cls.check_schema(schema)
        except SchemaError as exc:
            raise RuntimeError(f"Invalid schema for tool {name}: {exc}") from exc
        validator = cls(schema, registry=Registry())
        self._validators[name] = (key, validator)
        return validator


def _page(cursor: str | None, params: types.PaginatedRequestParams | None) -> dict[str, Any] | None:
    if params is not None:
        out = _dump(params)
        if cursor is not None:
            out["cursor"] = cursor
        return out or None
    return {"cursor": cursor} if cursor is not None else None


def _dump(params: BaseModel) -> dict[str, Any]:
    """Params on the wire exactly as the SDK session would send them."""
    return params.model_dump(by_alias=True, mode="json", exclude_none=True)


def _terminal(result: Any, method: str, allow_input_required: bool) -> Any:
    if isinstance(result, types.InputRequiredResult) and not allow_input_required:
        raise RuntimeError(
            "Server returned InputRequiredResult; pass allow_input_required=True to receive it "
            f"and retry {method}(..., input_responses=..., request_state=result.request_state)."
        )
    return result


@asynccontextmanager
async def guarded(
    session: ClientSession | Client,
    *,
    upstream_id: str,
    config: ConfigSource = None,
    server: ServerSource = None,
    identity: Identity | None = None,
) -> AsyncIterator[GuardedSession]:
    """The gateway in front of an SDK `ClientSession` (or an `mcp.Client`'s session), for the
    `async with` block. Closing it closes the gateway, not the session.

    `config`: a gateway config as a file path, a mapping in the YAML's shape, or a
    `LoadedConfig`; by default the built-in guards and the CLI's state directory. `server`: what
    the session is connected to (`StdioServerParameters` or a URL), for the server's identity.
    A session not yet initialized is initialized here (handshake era).
    """
    sdk_session = _client_session(session)
    check_session(sdk_session)
    if sdk_session.protocol_version is None:
        await sdk_session.initialize()
    loaded = gateway_config(config, upstream_id)
    who = server_identity(server, server_name(sdk_session), loaded.config.gateway, upstream_id)
    made: list[SdkSessionConnection] = []

    def connect() -> SdkSessionConnection:
        connection = SdkSessionConnection(
            upstream_id, sdk_session, who.digest, who.executable_sha256
        )
        made.append(connection)
        return connection

    gateway = await Gateway.start(loaded, connections={upstream_id: connect})
    wrapper = GuardedSession(gateway, sdk_session, upstream_id, made)
    try:
        await wrapper.open(identity or local_identity())
        yield wrapper
    finally:
        await wrapper.close()


wrap = guarded


def _client_session(session: object) -> ClientSession:
    if isinstance(session, ClientSession):
        return session
    if isinstance(session, Client):
        return session.session  # raises if the Client is not entered
    raise TypeError(
        f"guarded() takes an mcp ClientSession (or an mcp.Client), not {type(session).__name__}"
    )
