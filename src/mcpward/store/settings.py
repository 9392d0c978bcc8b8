"""The `store:` and `keys:` sections of the configuration: which backend holds the shared state.

SQLite in the state directory is the default (one box); PostgreSQL is for a fleet of replicas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcpward.secret_refs import SecretRef

StoreKind = Literal["sqlite", "postgres"]


class PoolSettings(BaseModel):
    """Connections each replica keeps open to PostgreSQL."""

    model_config = ConfigDict(extra="forbid")

    min: int = Field(default=2, ge=1, le=256)
    max: int = Field(default=16, ge=1, le=256)

    @model_validator(mode="after")
    def _ordered(self) -> PoolSettings:
        if self.max < self.min:
            raise ValueError(f"pool.max ({self.max}) is smaller than pool.min ({self.min})")
        return self


class StoreSettings(BaseModel):
    """Where pins, holds, approvals, revocations and the ledger live."""

    model_config = ConfigDict(extra="forbid")

    kind: StoreKind = Field(
        default="sqlite",
        description="sqlite (default): files in the state directory, one process. postgres: "
        "one database shared by every replica.",
    )
    dsn: SecretRef | str | None = Field(
        default=None,
        description="postgres: the connection string, as a SecretRef ({env: MCPWARD_PG_DSN}) or a "
        "literal DSN that holds no password (use PGPASSFILE or a SecretRef for one).",
    )
    pool: PoolSettings = Field(default_factory=PoolSettings)
    timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=120,
        description="Longest wait for a database connection; past it the call fails closed.",
    )

    @model_validator(mode="after")
    def _dsn_fits_kind(self) -> StoreSettings:
        if self.kind == "postgres" and self.dsn is None:
            raise ValueError(
                "store.kind postgres needs store.dsn (e.g. dsn: {env: MCPWARD_PG_DSN})"
            )
        if self.kind == "sqlite" and self.dsn is not None:
            raise ValueError("store.dsn is only used with store.kind: postgres")
        if isinstance(self.dsn, str) and _has_password(self.dsn):
            raise ValueError(
                "store.dsn holds a password in the config file; give it as a SecretRef "
                "(dsn: {env: MCPWARD_PG_DSN}) or use a PGPASSFILE"
            )
        return self


def _has_password(dsn: str) -> bool:
    from psycopg.conninfo import conninfo_to_dict

    try:
        return bool(conninfo_to_dict(dsn).get("password"))
    except Exception as exc:  # psycopg.ProgrammingError for a malformed DSN
        raise ValueError(f"store.dsn is not a valid connection string: {exc}") from None


class KeysSettings(BaseModel):
    """Where the secret keys live. Every replica needs the same keys; never in the database."""

    model_config = ConfigDict(extra="forbid")

    dir: Path | None = Field(
        default=None,
        description="Directory of the keys (pins.key, evidence/keys, the signing key); default: "
        "the state directory. A fleet shares one copy, distributed like any secret.",
    )
    pins: SecretRef | None = Field(
        default=None,
        description="The pins key (MACs pins, holds, revocations and client records) as a "
        "SecretRef instead of dir/pins.key: 32 bytes written as 64 hex digits or base64 "
        "(make one with `head -c 32 /dev/urandom | base64`). It is read, never created.",
    )

    @model_validator(mode="after")
    def _bare_keys(self) -> KeysSettings:
        if self.pins is not None and self.pins.prefix:
            raise ValueError("keys.pins takes no prefix: the value is the key itself")
        return self
