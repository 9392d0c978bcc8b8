"""Guard kind `http_hook`: ask an external policy service over HTTP (seed 004's third tier).

POSTs the seed's JSON (phase, operation, context), signed with HMAC-SHA256 over timestamp and body,
through the egress filter, within the guard's deadline; the answer must match RESPONSE_SCHEMA.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    import httpx

from mcpward.guards.wasm.decode import (
    DecisionFormatError,
    decode_deny,
    decode_modify_action,
)
from mcpward.hosts import checked_service_url, is_loopback_host
from mcpward.pipeline.context import GuardContext, Identity
from mcpward.pipeline.decisions import Allow, Decision, Modify
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import GatewayServices
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject
from mcpward.protocol.jsonrpc import dumps, loads
from mcpward.secret_refs import SecretRef, SecretUnavailable, resolve_secret

log = logging.getLogger("mcpward.guards.http_hook")

SIGNATURE_HEADER = "X-Mcpward-Signature"
TIMESTAMP_HEADER = "X-Mcpward-Timestamp"
GUARD_HEADER = "X-Mcpward-Guard"
SIGNATURE_VERSION = "v1"

_OPERATIONS = {
    Phase.TOOLS_LIST: "list_tools",
    Phase.TOOL_INVOKE: "call_tool",
    Phase.TOOL_RESULT: "tool_result",
    Phase.PROMPT_REQUEST: "get_prompt",
    Phase.RESOURCE_REQUEST: "read_resource",
}

_TEXT = {"type": "string", "minLength": 1}
RESPONSE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://mcpward.dev/schemas/http-hook-response.json",
    "title": "mcpward HTTP hook answer",
    "oneOf": [
        {
            "type": "object",
            "properties": {"decision": {"const": "allow"}},
            "required": ["decision"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "decision": {"const": "deny"},
                "reason": {
                    "type": "object",
                    "properties": {
                        "code": {**_TEXT, "maxLength": 128},
                        "message": {**_TEXT, "maxLength": 2048},
                        "details": {},
                    },
                    "required": ["code", "message"],
                    "additionalProperties": False,
                },
            },
            "required": ["decision", "reason"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "decision": {"const": "modify"},
                "action": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "type": {"const": "replace_tools"},
                                "tools": {"type": "array", "items": {"type": "object"}},
                            },
                            "required": ["type", "tools"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "type": {"const": "redact_fields"},
                                "paths": {"type": "array", "items": _TEXT, "minItems": 1},
                                "replacement": {"type": "string"},
                            },
                            "required": ["type", "paths"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "type": {"const": "add_warning"},
                                "message": _TEXT,
                            },
                            "required": ["type", "message"],
                            "additionalProperties": False,
                        },
                    ]
                },
            },
            "required": ["decision", "action"],
            "additionalProperties": False,
        },
    ],
}


@lru_cache(maxsize=1)
def _validator() -> Any:
    """Built on first use: jsonschema costs startup time every gateway would pay otherwise."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(RESPONSE_SCHEMA)


class HookError(Exception):
    """The hook gave no usable answer; the guard's failure mode decides."""


class HttpHookOptions(BaseModel):
    """The `config` block of a `kind: http_hook` guard."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The hook endpoint; http:// only for a loopback host.")
    secret: SecretRef = Field(
        description="HMAC-SHA256 signing key (env or file), at least 32 bytes."
    )
    allow_private: list[str] = Field(
        default_factory=list,
        description="Private addresses/CIDRs the hook may resolve to (loopback URLs are allowed).",
    )
    max_response_bytes: int = Field(default=256 * 1024, ge=64, le=16 * 1024 * 1024)

    @field_validator("url")
    @classmethod
    def _usable_url(cls, value: str) -> str:
        checked_service_url(value, "the hook authenticates the signature")
        parts = urlsplit(value)
        if parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
            raise ValueError(
                "a hook off this host must use https:// (the body carries arguments and results)"
            )
        return value

    @model_validator(mode="after")
    def _secret_readable(self) -> HttpHookOptions:
        try:
            key = resolve_secret(self.secret)
        except SecretUnavailable as exc:
            raise ValueError(f"secret: {exc}") from None
        if len(key.encode()) < 32:
            raise ValueError("secret: the signing key must be at least 32 bytes long")
        return self


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The signature header value: v1=hex(HMAC-SHA256(secret, timestamp + "." + body))."""
    mac = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={mac}"


def _identity(identity: Identity | None) -> dict[str, Any] | None:
    if identity is None:
        return None
    return {
        "sub": identity.sub,
        "email": identity.email,
        "groups": list(identity.groups),
        "claims": dict(identity.claims),
    }


class HttpHookGuard(Guard):
    """One hook URL; the HTTP client is built once at attach, through the egress filter."""

    kind = "http_hook"
    Options = HttpHookOptions

    def __init__(self, spec: GuardSpec, options: HttpHookOptions) -> None:
        super().__init__(spec, options)
        self.options: HttpHookOptions = options
        self._secret = resolve_secret(options.secret).encode()
        self._client: httpx.AsyncClient | None = None

    def _make_client(self, services: GatewayServices) -> httpx.AsyncClient:
        """THE place the hook's connections are made: the gateway's egress-filtered client.

        A loopback URL (the usual local policy service) is allowed by its own address; anything
        else must resolve to public addresses unless allow_private names it.
        """
        host = urlsplit(self.options.url).hostname or ""
        allow = list(self.options.allow_private)
        if is_loopback_host(host):
            allow += ["127.0.0.0/8", "::1/128"] if host == "localhost" else [host.strip("[]")]
        client: httpx.AsyncClient = services.http_client(allow, self.spec.timeout_ms / 1000.0)
        return client

    async def attach(self, services: GatewayServices) -> None:
        self._client = self._make_client(services)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    def _body(self, phase: Phase, data: dict[str, Any], ctx: GuardContext) -> bytes:
        metadata = dict(ctx.metadata)
        metadata.setdefault("method", ctx.method)
        metadata.setdefault("era", ctx.era.value)
        return dumps(
            {
                "phase": phase.value,
                "guard": self.id,
                "operation": {"type": _OPERATIONS[phase], "data": data},
                "context": {
                    "server_name": ctx.server_name,
                    "identity": _identity(ctx.identity),
                    "metadata": metadata,
                },
            }
        )

    async def _ask(self, body: bytes) -> Any:
        client = self._client
        if client is None:  # never attached: fail by this guard's failure mode
            raise RuntimeError("http_hook guard used before the gateway attached it")
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(self._secret, timestamp, body),
            GUARD_HEADER: self.id,
        }
        limit = self.options.max_response_bytes
        async with client.stream(
            "POST", self.options.url, content=body, headers=headers
        ) as response:
            if response.status_code != 200:
                raise HookError(f"hook answered HTTP {response.status_code}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise HookError(f"hook answer is over {limit} bytes")
                chunks.append(chunk)
        try:
            return loads(b"".join(chunks))
        except ValueError:
            raise HookError("hook answer is not JSON") from None

    async def _evaluate(
        self, phase: Phase, data: dict[str, Any], ctx: GuardContext, payload: Any
    ) -> Decision:
        try:
            answer = await self._ask(self._body(phase, data, ctx))
        except HookError as exc:
            log.warning("http hook %s at %s: %s", self.id, phase.value, exc)
            raise
        except _http_error() as exc:
            log.warning("http hook %s at %s: %s", self.id, phase.value, type(exc).__name__)
            raise HookError(f"request failed: {type(exc).__name__}") from None
        error = next(iter(_validator().iter_errors(answer)), None)
        if error is not None:
            log.warning(
                "http hook %s at %s: answer does not match the schema", self.id, phase.value
            )
            raise HookError("hook answer does not match the response schema")
        evidence = {"hook": self.id}
        try:
            if answer["decision"] == "allow":
                return Allow(evidence=evidence)
            if answer["decision"] == "deny":
                reason = answer["reason"]
                return decode_deny(
                    reason["code"], reason["message"], reason.get("details"), evidence
                )
            return Modify(decode_modify_action(answer["action"], phase, payload), evidence=evidence)
        except DecisionFormatError as exc:
            log.warning("http hook %s at %s: %s", self.id, phase.value, exc)
            raise HookError(str(exc)) from None

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._evaluate(
            Phase.TOOLS_LIST, {"tools": subject.payload}, ctx, subject.payload
        )

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        data = {"name": subject.name, "arguments": subject.payload}
        return await self._evaluate(Phase.TOOL_INVOKE, data, ctx, subject.payload)

    async def on_tool_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        data = {"name": subject.name, "result": subject.payload}
        return await self._evaluate(Phase.TOOL_RESULT, data, ctx, subject.payload)

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        data = {"name": subject.name, "arguments": subject.payload}
        return await self._evaluate(Phase.PROMPT_REQUEST, data, ctx, subject.payload)

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return await self._evaluate(
            Phase.RESOURCE_REQUEST, {"uri": subject.name}, ctx, subject.payload
        )


def _http_error() -> type[Exception]:
    import httpx

    return httpx.HTTPError
