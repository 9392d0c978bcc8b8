"""The `telemetry:` section of the config: where metrics are served in stdio mode, and where
traces go. Nothing leaves the host unless `otlp_endpoint` is set.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mcpward.secret_refs import SecretRef
from mcpward.telemetry.labels import DEFAULT_TOOL_CAP


class TelemetrySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metrics_listen: str | None = Field(
        default=None,
        pattern=r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$",
        description="stdio mode: serve GET /metrics on this HOST:PORT (loopback unless "
        "metrics_allow_non_loopback). The HTTP front serves /metrics itself, to the admin token.",
    )
    metrics_allow_non_loopback: bool = Field(
        default=False,
        description="The explicit acknowledgement that metrics_listen is not a loopback address.",
    )
    metrics_token: SecretRef | None = Field(
        default=None,
        description="stdio mode: a bearer token (env or file) the scraper must send to "
        "metrics_listen. Optional on loopback, required off it.",
    )
    otlp_endpoint: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s]+$",
        max_length=2048,
        description="OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces); unset = "
        "no traces, and OpenTelemetry is not even imported. Spans go to this URL only.",
    )
    otlp_allow_private: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="Addresses or CIDR ranges the OTLP endpoint may reach although they are "
        "private (e.g. 127.0.0.1 for a collector on this host): exports pass the egress filter "
        "like every outgoing connection.",
    )
    service_name: str = Field(default="mcpward", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    sampling_ratio: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Share of judged calls traced (parent-based)."
    )
    tool_label_cap: int = Field(
        default=DEFAULT_TOOL_CAP,
        ge=0,
        le=1000,
        description="Distinct listed tool names per upstream that get their own metric label; "
        "later names count as _other.",
    )
