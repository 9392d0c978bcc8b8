"""A secret kept outside the config file (an environment variable or a file), and reading it.

The value is used, never logged; a reference that cannot be read is a clear error. Config models,
connectors and guards all use it, so it sits below every layer.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SecretRef(BaseModel):
    """A secret value taken from an environment variable or a file, never written in config."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(default=None, description="Environment variable holding the value.")
    file: Path | None = Field(
        default=None, description="File holding the value (trailing newline stripped)."
    )
    prefix: str = Field(default="", description='Text put before the value, e.g. "Bearer ".')

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of env or file")
        return self


class SecretUnavailable(Exception):
    """A configured secret reference that cannot be read."""


def resolve_secret(ref: SecretRef) -> str:
    """The value a SecretRef names: an environment variable, or a file (trailing newline cut)."""
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise SecretUnavailable(f"environment variable {ref.env} is not set")
    else:
        assert ref.file is not None
        try:
            value = ref.file.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise SecretUnavailable(f"cannot read {ref.file}: {exc.strerror or exc}") from None
    return ref.prefix + value
