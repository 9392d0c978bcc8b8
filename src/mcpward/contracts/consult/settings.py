"""The `consult:` section of the gateway config: which model endpoint tier 2 asks, with what
deadline, caps and triggers. Absent means off: nothing is ever sent anywhere."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcpward.hosts import checked_service_url, is_loopback_host
from mcpward.secret_refs import SecretRef

MAX_DEADLINE_S = 30.0


class Trigger(StrEnum):
    """What makes a structurally benign (PROCEED) change ambiguous enough to consult about."""

    DESCRIPTION_REWRITTEN = "description_rewritten"  # agent-read text rewritten, no marker
    OPTIONAL_PARAM_ASKS_FOR_DATA = "optional_param_asks_for_data"  # a new optional parameter
    POISONING_BELOW_THRESHOLD = "poisoning_below_threshold"  # weak poisoning findings grew


class ConsultSettings(BaseModel):
    """An OpenAI-compatible chat-completions endpoint (llama.cpp server, Ollama, vLLM, hosted)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Switch the consult off without removing it.")
    url: str = Field(
        description="The chat-completions URL, e.g. http://127.0.0.1:8080/v1/chat/completions "
        "(http:// only for a loopback host or an allow_private address)."
    )
    model: str = Field(min_length=1, max_length=200, description="The model name to ask for.")
    api_key: SecretRef | None = Field(
        default=None,
        description="Sent as `Authorization: Bearer ...` to this endpoint only (env or file).",
    )
    allow_private: list[str] = Field(
        default_factory=list,
        description="Private addresses/CIDRs the endpoint may resolve to (the egress filter "
        "blocks private, loopback and metadata addresses otherwise; a local server needs "
        "e.g. 127.0.0.1 here).",
    )
    deadline_s: float = Field(
        default=4.0,
        gt=0,
        le=MAX_DEADLINE_S,
        description="The most one consult may take; a call waits at most this long once per "
        "contract change. On expiry the deterministic verdict stands.",
    )
    max_tokens: int = Field(default=256, ge=16, le=2048)
    max_prompt_chars: int = Field(
        default=4096, ge=512, le=32768, description="Cap on the consulted contract text."
    )
    max_response_bytes: int = Field(default=64 * 1024, ge=1024, le=4 * 1024 * 1024)
    response_format: Literal["json_schema", "json_object", "none"] = Field(
        default="json_schema",
        description="How the answer is constrained server-side (it is validated either way).",
    )
    triggers: list[Trigger] = Field(
        default_factory=lambda: list(Trigger), description="Which ambiguity triggers are on."
    )
    cache_size: int = Field(
        default=1024, ge=1, le=100_000, description="Verdicts kept, by (old, new) contract hash."
    )
    max_concurrent: int = Field(default=2, ge=1, le=16)
    max_pending: int = Field(
        default=64, ge=1, le=4096, description="Consults queued at once; more are not asked."
    )

    @field_validator("url")
    @classmethod
    def _usable_url(cls, value: str) -> str:
        return checked_service_url(value, "use api_key (env or file)")

    @model_validator(mode="after")
    def _plain_http_stays_near(self) -> ConsultSettings:
        host = urlsplit(self.url).hostname or ""
        if urlsplit(self.url).scheme == "http" and not (
            is_loopback_host(host)
            or host.strip("[]") in {a.split("/")[0] for a in self.allow_private}
        ):
            raise ValueError(
                "url: a consult endpoint off this host must use https:// (the request carries "
                "contract text and the api key); http:// is accepted for a loopback host or an "
                "address listed in allow_private"
            )
        return self

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""
