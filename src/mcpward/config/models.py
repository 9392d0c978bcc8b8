"""Pydantic models of the configuration file. `mcpward config schema` prints their JSON Schema.

The upstream entries live in `config.upstreams` (re-exported here): `mcpward run -- CMD` reads
one before it loads the rest, to start the server while the gateway sets itself up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
    field_validator,
)

from mcpward.config.guards import GuardsConfig
from mcpward.config.http_front import HttpFront
from mcpward.config.upstreams import (
    DEFAULT_MAX_FRAME_BYTES,
    HttpUpstream,
    StdioUpstream,
    Strict,
)
from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.egress.endpoint import endpoint_refusal
from mcpward.egress.policy import EgressConfigError
from mcpward.evidence.settings import EvidenceSettings
from mcpward.pipeline.spec import Mode
from mcpward.store.settings import KeysSettings, StoreSettings
from mcpward.telemetry.settings import TelemetrySettings


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
    max_frame_bytes: int = Field(default=DEFAULT_MAX_FRAME_BYTES, ge=1024, le=256 * 1024 * 1024)
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
    console_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="Where people review holds (`mcpward console`, or the HTTP front's "
        "/console); named in every HOLD message a client gets.",
    )
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
    guards: GuardsConfig | None = Field(
        default=None,
        description="Guards added to the built-in defaults (an entry with a default's id "
        "adjusts it); `{replace_defaults: true, list: [...]}` runs only the listed guards. "
        "Omitted = the built-in defaults.",
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
