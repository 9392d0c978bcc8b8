"""The `store:` and `keys:` sections of the configuration: which backend holds the shared state.

SQLite in the state directory is the default (one box); PostgreSQL is for a fleet of replicas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcpward.secret_refs import SecretRef

StoreKind = Literal["sqlite", "postgres"]
MAX_HMAC_KEYS = 64  # keys.ledger_hmac: the current key and the older ones still verified


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
    ledger_hmac: list[SecretRef] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_HMAC_KEYS,
        description="The ledger's HMAC keys as SecretRefs instead of dir/evidence/keys, each 32 "
        "bytes (hex or base64), newest first: a new ledger starts with the first, and "
        "`mcpward ledger rotate-key` moves the ledger to the first; older keys stay listed so "
        "their entries verify. One SecretRef alone is a list of one. Read, never created.",
    )
    signing: SecretRef | None = Field(
        default=None,
        description="The checkpoint signing key (an Ed25519 seed: 32 bytes, hex or base64) as a "
        "SecretRef instead of dir/evidence/keys/signing.key; no signing.pub is written: "
        "`mcpward ledger public-key --config F` derives it. Read, never created.",
    )

    @field_validator("ledger_hmac", mode="before")
    @classmethod
    def _one_is_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, dict | SecretRef) else value

    @model_validator(mode="after")
    def _bare_keys(self) -> KeysSettings:
        named = [("keys.pins", self.pins), ("keys.signing", self.signing)]
        named += [(f"keys.ledger_hmac[{i}]", ref) for i, ref in enumerate(self.ledger_hmac or [])]
        for name, ref in named:
            if ref is not None and ref.prefix:
                raise ValueError(f"{name} takes no prefix: the value is the key itself")
        return self
