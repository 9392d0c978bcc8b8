"""The `evidence:` section of the configuration and where the evidence files live in the state dir.

Defaults: evidence on, `crash_safe` durability, a checkpoint every 1000 entries or 300 s and at
shutdown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from mcpward.secret_refs import SecretRef

Durability = Literal["crash_safe", "sync", "batched"]
# What each level can lose, in one line each (docs/evidence.md says it at length).
DURABILITY_LOSS = {
    "crash_safe": "a process kill loses nothing answered; a power cut loses at most "
    "fsync_interval_ms of receipts",
    "sync": "nothing answered, even on a power cut",
    "batched": "a process kill loses the receipts of up to batch_interval_ms of answered calls; "
    "a power cut also what was committed since SQLite last fsynced its log",
}


class EvidenceSettings(BaseModel):
    """Receipts, the ledger and its checkpoints."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Write a receipt for every decision.")
    durability: Durability = Field(
        default="crash_safe",
        description="crash_safe (default): a receipt is committed to the ledger's write-ahead "
        "log before its response is released (a killed gateway loses none) and fsynced within "
        "fsync_interval_ms (a power cut loses at most that window). sync: fsynced before the "
        "response is released; receipts waiting together share one transaction and one fsync. "
        "batched: the response goes first, receipts are committed in the background; a killed "
        "gateway can lose the last batch (see docs/evidence.md).",
    )
    fsync_interval_ms: float = Field(
        default=50.0,
        gt=0,
        le=1_000,
        description="crash_safe: longest a committed receipt waits for its fsync.",
    )
    checkpoint_every_entries: int = Field(
        default=1000, ge=1, le=10_000_000, description="Sign a checkpoint after this many entries."
    )
    checkpoint_every_seconds: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="Sign a checkpoint at least this often (if new entries).",
    )
    batch_interval_ms: float = Field(
        default=20.0,
        gt=0,
        le=5_000,
        description="batched: longest a receipt waits before its commit (the writer commits "
        "sooner once 16 receipts wait).",
    )
    batch_max_entries: int = Field(
        default=2048,
        ge=1,
        le=100_000,
        description="Most receipts committed in one transaction (batched: a backlog over 8 "
        "times this makes callers wait).",
    )
    path: Path | None = Field(
        default=None,
        description="The ledger database; relative paths are under the state dir "
        "(default: <state_dir>/evidence/ledger.sqlite).",
    )


class KeySources(Protocol):
    """Where a store's keys are (`store.factory.StoreContext`; structural: no import upward)."""

    @property
    def keys_dir(self) -> Path: ...

    @property
    def hmac_refs(self) -> tuple[SecretRef, ...]: ...

    @property
    def signing_ref(self) -> SecretRef | None: ...


@dataclass(frozen=True, slots=True)
class EvidencePaths:
    """Files of the evidence layer. Keys are secret (0600); the `.pub` verifier key is public.
    `hmac_refs` / `signing_ref` (`keys.ledger_hmac`, `keys.signing`) replace the key files."""

    root: Path
    ledger: Path
    keys: Path
    public_key: Path
    latest_checkpoint: Path
    hmac_refs: tuple[SecretRef, ...] = ()
    signing_ref: SecretRef | None = None

    @classmethod
    def resolve(
        cls,
        state_dir: Path,
        ledger: Path | None = None,
        keys_dir: Path | None = None,
        *,
        store: KeySources | None = None,
    ) -> EvidencePaths:
        """`keys_dir` (the `keys:` section; a fleet shares it) holds `evidence/keys` and
        `evidence/signing.pub`; default: the state dir. `store`: its keys dir and key SecretRefs
        (instead of `keys_dir`)."""
        if store is not None:
            keys_dir = store.keys_dir
        root = state_dir / "evidence"
        key_root = root if keys_dir is None else keys_dir / "evidence"
        path = root / "ledger.sqlite" if ledger is None else ledger.expanduser()
        return cls(
            root=root,
            ledger=path if path.is_absolute() else state_dir / path,
            keys=key_root / "keys",
            public_key=key_root / "signing.pub",
            latest_checkpoint=root / "checkpoint.latest",
            hmac_refs=store.hmac_refs if store is not None else (),
            signing_ref=store.signing_ref if store is not None else None,
        )
