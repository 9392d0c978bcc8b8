"""The configuration of one upstream server (`upstreams:` entries), importable on its own: only
pydantic and `secret_refs`. `mcpward run -- CMD` validates its upstream with these models and
starts the server before the rest of the configuration and the gateway are loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpward.secret_refs import SecretRef

DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024  # gateway.max_frame_bytes


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


UPSTREAM_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$"


class RestartPolicy(Strict):
    enabled: bool = True
    initial_backoff_s: float = Field(default=0.5, gt=0, le=60)
    max_backoff_s: float = Field(default=30.0, gt=0, le=3600)


class ProcessPolicy(Strict):
    """Who shares this upstream's processes, how many there may be, and how many wait warm
    (docs/architecture.md, "Upstream processes")."""

    sharing: Literal["session", "identity", "shared"] = Field(
        default="session",
        description="session: one process per client session (full isolation; the default); "
        "identity: one per client identity, shared by its sessions; shared: one process for "
        "every 2026-07-28 stateless client (handshake-era sessions then share per identity).",
    )
    max_processes: int = Field(
        default=128, ge=1, le=10_000, description="Cap on this upstream's processes."
    )
    warm_spares: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Started, answering processes kept ready for new sessions (HTTP front only). "
        "Opt-in: a spare started before the server was upgraded serves the old version.",
    )
    idle_timeout_s: float = Field(
        default=300.0,
        gt=0,
        le=86400,
        description="A shared process with no session, or the spares of an upstream nobody has "
        "used, are stopped after this long.",
    )


class StdioUpstream(Strict):
    """An MCP server started as a subprocess speaking stdio."""

    kind: Literal["stdio"] = "stdio"
    id: str = Field(pattern=UPSTREAM_ID, description="Operator-given identity of this upstream.")
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Variables set for the child.")
    pass_env: list[str] = Field(
        default_factory=list,
        description="Names of the gateway's environment variables passed through to the child. "
        "Nothing else is inherited except a minimal PATH/HOME/LANG set.",
    )
    cwd: Path | None = None
    restart: RestartPolicy = Field(default_factory=RestartPolicy)
    processes: ProcessPolicy = Field(default_factory=ProcessPolicy)


class HttpUpstream(Strict):
    """An MCP server reached over Streamable HTTP."""

    kind: Literal["http"] = "http"
    id: str = Field(pattern=UPSTREAM_ID)
    url: str = Field(pattern=r"^https?://", description="The server's MCP endpoint URL.")
    headers: dict[str, SecretRef] = Field(
        default_factory=dict, description="Headers sent upstream; values come from env or files."
    )
    allow_private: list[str] = Field(
        default_factory=list,
        description="Addresses or CIDR ranges this upstream may reach although they are private "
        "(the egress filter blocks private, loopback and metadata addresses otherwise).",
    )
    restart: RestartPolicy = Field(default_factory=RestartPolicy)
    owned: bool = Field(
        default=False,
        description="The operator runs this server: `mcpward validate` may send it input "
        "probes that must be refused (and valid calls to read-only tools only).",
    )
