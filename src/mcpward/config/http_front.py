"""The `front: {kind: http}` configuration and the start-up refusals of the default-closed posture
(no credential; a non-loopback bind without, or an acknowledgement without, the other decision).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcpward.hosts import is_loopback_host
from mcpward.identity.models import OAuthSettings, StaticToken
from mcpward.secret_refs import SecretRef

DEFAULT_PORT = 8931
DEFAULT_BODY_CAP = 4 * 1024 * 1024
DEFAULT_STREAM_BUFFER = 4 * 1024 * 1024
DEFAULT_EVENT_LOG_SESSION = 4 * 1024 * 1024
DEFAULT_EVENT_LOG_TOTAL = 64 * 1024 * 1024


class HttpFrontRefused(ValueError):
    """A front configuration the gateway refuses to start with; the message says what to change."""


class HttpFront(BaseModel):
    """Clients reach the gateway over Streamable HTTP."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["http"] = "http"
    host: str = Field(
        default="127.0.0.1",
        description="Bind address. Anything but loopback also needs allow_non_loopback: true.",
    )
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    path: str = Field(default="/mcp", pattern=r"^/[A-Za-z0-9._~/-]*$")
    allow_non_loopback: bool = Field(
        default=False,
        description="The explicit acknowledgement that the gateway may listen beyond this host.",
    )
    tokens: list[StaticToken] = Field(
        default_factory=list, description="Per-client bearer tokens (stored as SHA-256 hashes)."
    )
    oauth: OAuthSettings | None = Field(default=None, description="OAuth 2.1 resource server.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header values accepted (host or host:port; host:* for any port). "
        "Loopback names with the bound port are always accepted on a loopback bind.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Extra Origin values accepted from browsers (scheme://host[:port]).",
    )
    public_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="The URL clients use for the MCP endpoint (RFC 9728 `resource`); "
        "default: http://<host>:<port><path>.",
    )
    admin_token: SecretRef | None = Field(
        default=None,
        description="The review console's admin token; when set, the console is served at "
        "/console (never accepted on the MCP endpoint; must differ from every client token).",
    )
    max_body_bytes: int = Field(default=DEFAULT_BODY_CAP, ge=1024, le=256 * 1024 * 1024)
    # Each handshake session holds a process per stdio upstream by default (~40 MB for a Python
    # server): 512 is what a 24 GiB host holds with headroom; the process caps may refuse sooner.
    max_sessions: int = Field(default=512, ge=1, le=1_000_000)
    session_idle_timeout_s: float = Field(default=1800.0, gt=0, le=86400)
    # What a connection can make the front hold before its request reaches authentication
    # (fronts/http/head_guard.py; docs/http-front.md "Connections").
    max_head_bytes: int = Field(
        default=64 * 1024,
        ge=4096,
        le=1024 * 1024,
        description="Cap on a request's head (request line and headers): 431 and close.",
    )
    max_header_line_bytes: int = Field(
        default=8 * 1024,
        ge=1024,
        le=1024 * 1024,
        description="Cap on one header line or the request target: 431 (414) and close.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="A request head must be complete this long after the connection opened or "
        "the request began; else the connection is closed (408 if it had begun).",
    )
    body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="A request body must be complete this long after its head; else 408 and "
        "the request is dropped (a client that stalls mid-body holds nothing for long).",
    )
    keep_alive_timeout_s: float = Field(
        default=5.0, gt=0, le=300, description="An idle keep-alive connection is closed after this."
    )
    max_connections: int = Field(
        default=1024,
        ge=1,
        le=1_000_000,
        description="Connections open at once; the next one gets 503 and is closed.",
    )
    max_stream_buffer_bytes: int = Field(
        default=DEFAULT_STREAM_BUFFER,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="Bytes one SSE stream may hold for a client that does not read it; past "
        "it the stream is closed (handshake era: resumable with Last-Event-ID; 2026-07-28: "
        "the request is cancelled).",
    )
    max_event_log_bytes_per_session: int = Field(
        default=DEFAULT_EVENT_LOG_SESSION,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="Bytes of events a handshake-era session keeps for Last-Event-ID replay "
        "(also at most 1,000 events); the oldest go first.",
    )
    max_event_log_bytes: int = Field(
        default=DEFAULT_EVENT_LOG_TOTAL,
        ge=64 * 1024,
        le=16 * 1024 * 1024 * 1024,
        description="Bytes of replayable events all sessions keep together; past it the "
        "process's oldest events go first, whichever session they belong to.",
    )

    @model_validator(mode="after")
    def _posture(self) -> HttpFront:
        check_posture(self)
        return self


def check_posture(front: HttpFront) -> None:
    """Raise HttpFrontRefused unless the front is closed by default as the issue requires."""
    if not front.tokens and front.oauth is None:
        raise HttpFrontRefused(
            "the HTTP front refuses to start without a client credential: add front.tokens "
            "(make one with `mcpward token new --client-id NAME`) or front.oauth "
            "(quick form: --token-file FILE)"
        )
    loopback = is_loopback_host(front.host)
    if not loopback and not front.allow_non_loopback:
        raise HttpFrontRefused(
            f"front.host {front.host!r} is not a loopback address, and the acknowledgement is "
            "missing: also set front.allow_non_loopback: true (quick form: --allow-non-loopback) "
            "to let the gateway listen beyond this host"
        )
    if loopback and front.allow_non_loopback:
        raise HttpFrontRefused(
            "front.allow_non_loopback is set but the non-loopback address is missing: "
            f"front.host is {front.host!r}; set a non-loopback front.host, or remove "
            "allow_non_loopback"
        )
    if not loopback and not front.allowed_hosts:
        raise HttpFrontRefused(
            f"front.host {front.host!r} is not loopback: list the host names clients use in "
            "front.allowed_hosts (Host headers are checked on every request)"
        )


def parse_http_address(text: str) -> tuple[str, int]:
    """`127.0.0.1:8080`, `[::1]:8080`, `localhost:8080` or a bare port."""
    text = text.strip()
    if text.isdigit():
        return "127.0.0.1", int(text)
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
    else:
        host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise HttpFrontRefused(f"--http takes HOST:PORT (e.g. 127.0.0.1:8080), got {text!r}")
    return host, int(port)
