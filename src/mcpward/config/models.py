"""Pydantic models of the configuration file. `mcpward config schema` prints their JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
)

from mcpward.config.http_front import HttpFront
from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.egress.endpoint import endpoint_refusal
from mcpward.egress.policy import EgressConfigError
from mcpward.evidence.settings import EvidenceSettings
from mcpward.pipeline.spec import GuardSpec, Mode
from mcpward.secret_refs import SecretRef
from mcpward.store.settings import KeysSettings, StoreSettings
from mcpward.telemetry.settings import TelemetrySettings

UPSTREAM_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


def _passes_egress(url: str, allow: list[str], fields: tuple[str, str], section: str) -> None:
    """An operator-given endpoint (`fields`: its URL and allow-list settings in `section`) that
    the egress filter would refuse on every connection is refused when the config loads."""
    url_field, allow_field = fields
    try:
        refusal = endpoint_refusal(url, allow)
    except EgressConfigError as exc:
        raise ValueError(f"{allow_field}: {exc}") from None
    if refusal is not None:
        raise ValueError(
            f"{url_field}: {refusal}; the egress filter would block every connection to it. List "
            f"its address in {section}.{allow_field} (e.g. 127.0.0.1) if it is meant"
        )


def _upstream_kind(value: object) -> str:
    """`kind` may be omitted: a `url` means http, anything else stdio."""
    if isinstance(value, dict):
        return str(value.get("kind") or ("http" if "url" in value else "stdio"))
    return str(getattr(value, "kind", "stdio"))


Upstream = Annotated[
    Annotated[StdioUpstream, Tag("stdio")] | Annotated[HttpUpstream, Tag("http")],
    Discriminator(_upstream_kind),
]


class StdioFront(Strict):
    kind: Literal["stdio"] = "stdio"


Front = Annotated[StdioFront | HttpFront, Field(discriminator="kind")]


class GatewaySettings(Strict):
    namespacing: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="Prefix tool/prompt names with the upstream id: auto = only with 2+ upstreams.",
    )
    namespace_separator: str = Field(default="__", pattern=r"^[A-Za-z0-9_.-]{1,4}$")
    max_frame_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    request_timeout_s: float = Field(
        default=120.0, gt=0, le=3600, description="Deadline for an upstream's answer to a request."
    )
    connect_timeout_s: float = Field(default=30.0, gt=0, le=600)
    upstream_send_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="An upstream that takes none of what is sent to it for this long is stuck: "
        "its calls fail -32011 not_reading and it is restarted.",
    )
    upstream_send_queue_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="Bytes that may wait to be written to one upstream connection; past it a "
        "request fails -32011 not_reading and a notification is dropped.",
    )
    max_processes: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Cap on upstream processes across every stdio upstream (warm spares "
        "included); a session that would exceed it is refused (HTTP 503, or -32011 capacity).",
    )
    mode: Mode = Field(default=Mode.ENFORCE, description="enforce | shadow (record, do not block).")
    relist_interval_s: float = Field(
        default=300.0,
        ge=0,
        le=86400,
        description="The gateway re-reads every upstream's lists this often (0 = only on "
        "connect and list_changed); catches servers that change without notifying.",
    )


class LogSettings(Strict):
    level: Literal["debug", "info", "warning", "error"] = "info"
    file: Path | None = Field(default=None, description="Log file; default: standard error.")


class GatewayConfig(Strict):
    """The whole configuration file."""

    version: Literal[1] = 1
    front: Front = Field(default_factory=StdioFront)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    upstreams: list[Upstream] = Field(min_length=1)
    guards: list[GuardSpec] | None = Field(
        default=None, description="The guard pipeline; omitted = the built-in default guards."
    )
    state_dir: Path | None = Field(
        default=None, description="Where pins, keys and the ledger live (default: XDG state dir)."
    )
    logging: LogSettings = Field(default_factory=LogSettings)
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)
    telemetry: TelemetrySettings = Field(
        default_factory=TelemetrySettings,
        description="/metrics in stdio mode, and OTLP traces (off unless configured).",
    )
    store: StoreSettings = Field(default_factory=StoreSettings)
    keys: KeysSettings = Field(default_factory=KeysSettings)
    consult: ConsultSettings | None = Field(
        default=None,
        description="Tier 2 of the drift gate: an escalate-only semantic consult of a model "
        "about structurally benign but ambiguous contract changes. Omitted = off: nothing is "
        "sent anywhere.",
    )

    @field_validator("consult")
    @classmethod
    def _consult_endpoint_passes_egress(
        cls, value: ConsultSettings | None
    ) -> ConsultSettings | None:
        if value is not None:
            _passes_egress(value.url, value.allow_private, ("url", "allow_private"), "consult")
        return value

    @field_validator("telemetry")
    @classmethod
    def _otlp_endpoint_passes_egress(cls, value: TelemetrySettings) -> TelemetrySettings:
        if value.otlp_endpoint is not None:
            fields = ("otlp_endpoint", "otlp_allow_private")
            _passes_egress(value.otlp_endpoint, value.otlp_allow_private, fields, "telemetry")
        return value

    @field_validator("upstreams")
    @classmethod
    def _unique_ids(
        cls, value: list[StdioUpstream | HttpUpstream]
    ) -> list[StdioUpstream | HttpUpstream]:
        seen: set[str] = set()
        for upstream in value:
            if upstream.id in seen:
                raise ValueError(f"upstream id {upstream.id!r} is used twice; ids must be unique")
            seen.add(upstream.id)
        return value

    def namespaced(self) -> bool:
        mode = self.gateway.namespacing
        return mode == "always" or (mode == "auto" and len(self.upstreams) > 1)
