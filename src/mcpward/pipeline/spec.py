"""The fields every guard has in config (seed 004's contract), validated by pydantic."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcpward.pipeline.phases import Phase


class FailureMode(str, Enum):
    FAIL_CLOSED = "fail_closed"
    FAIL_OPEN = "fail_open"


class Mode(str, Enum):
    """enforce: denials and holds stop the call; shadow: they are recorded and the call proceeds."""

    ENFORCE = "enforce"
    SHADOW = "shadow"


class GuardSpec(BaseModel):
    """One guard in the pipeline. `config` is validated against the guard kind's own options."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="Guard kind, e.g. tool_filter, tool_poisoning, rug_pull, wasm.")
    id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="Unique guard id used in errors and receipts (default: the kind).",
    )
    enabled: bool = True
    priority: int = Field(default=50, ge=0, le=100, description="0-100, lower runs first.")
    timeout_ms: int = Field(default=1000, ge=10, le=10000)
    failure_mode: FailureMode = FailureMode.FAIL_CLOSED
    mode: Mode | None = Field(default=None, description="enforce | shadow; default: the gateway's.")
    runs_on: list[Phase] = Field(description="Non-empty list of phases this guard runs at.")
    config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("runs_on")
    @classmethod
    def _non_empty(cls, value: list[Phase]) -> list[Phase]:
        if not value:
            raise ValueError("runs_on must name at least one phase; an empty list would never run")
        if len(set(value)) != len(value):
            raise ValueError("runs_on lists a phase twice")
        return value
