"""The ledger as the gateway and CLI use it: append receipts, rotate keys, sign checkpoints, verify.

Composes a LedgerStore (storage), the HMAC keyring and the Ed25519 signer (state dir).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from mcpward.evidence.chain import ChainHead, PendingEntry, SealedEntry, seal
from mcpward.evidence.checkpoint import Checkpoint, SignedCheckpoint, origin_for, read_unverified
from mcpward.evidence.keyring import ConfiguredHmacKeys, HmacKeyring, read_verifier_keys
from mcpward.evidence.ledger_keys import (
    LedgerKeys,
    existing_hmac_keys,
    load_ledger_keys,
    local_verifiers,
)
from mcpward.evidence.note import NoteSigner, VerifierKey
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.store import LedgerStore, LedgerView, StoredCheckpoint
from mcpward.evidence.verify import LedgerVerifier, VerifyReport
from mcpward.evidence.vocabulary import EntryKind
from mcpward.store.keys import KeyFileError
from mcpward.store.ledger_sqlite import SqliteLedgerStore, read_snapshot


@dataclass(frozen=True, slots=True)
class KeyRotation:
    old_key_id: str
    new_key_id: str
    seq: int


class Ledger:
    """A writable ledger. Methods block (SQLite, fsync): in async code call them from a thread."""

    def __init__(
        self, store: LedgerStore, keyring: HmacKeyring, signer: NoteSigner, paths: EvidencePaths
    ) -> None:
        self.store = store
        self.keyring = keyring
        self.signer = signer
        self.paths = paths

    @classmethod
    def open(
        cls,
        paths: EvidencePaths,
        *,
        synchronous: str = "FULL",
        store: LedgerStore | None = None,
        keys: LedgerKeys | None = None,
    ) -> Ledger:
        """Open (creating on first run) the ledger, its HMAC key and its signing key. `store`:
        an opened backend (the fleet's PostgreSQL ledger); default: the SQLite file of `paths`.
        `keys`: loaded already (default: from `paths`). Raises KeyFileError for unusable keys."""
        paths.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        keys = load_ledger_keys(paths) if keys is None else keys
        owned = store is None  # closed here if refused; a given store is the caller's
        if store is None:
            store = SqliteLedgerStore(paths.ledger, synchronous=synchronous)
        ledger = cls(store, keys.keyring, keys.signer, paths)
        if isinstance(keys.keyring, ConfiguredHmacKeys):  # a config change can swap keys
            current = ledger.head().next_key_id
            if current is not None and keys.keyring.get(current) is None:
                if owned:
                    store.close()
                raise KeyFileError(
                    f"the ledger's current HMAC key {current} is not in {keys.keyring.where} "
                    "(keys of another ledger?); it cannot be extended without it"
                )
        return ledger

    @property
    def origin(self) -> str:
        return origin_for(self.store.ledger_id)

    def head(self) -> ChainHead:
        return self.store.head()

    def append(self, pending: Sequence[PendingEntry]) -> list[SealedEntry]:
        """Chain and commit `pending` in one transaction (durable when this returns if the store
        was opened with synchronous=FULL; with NORMAL, once `store.sync_wal()` has run)."""
        if not pending:
            return []
        return self.store.append(lambda head: seal(head, pending, self.keyring))

    def rotate_key(self, now: float | None = None) -> KeyRotation:
        """Create a new HMAC key and record the rotation as an entry sealed with the old key.

        Entries after the rotation use the new key; old keys stay in the keyring for verification.
        """
        previous = self.keyring.ensure_active()
        new_key = self.keyring.rotation_target()
        recorded = time.time() if now is None else now
        used: list[str] = []

        def build(head: ChainHead) -> list[SealedEntry]:
            # The chain, not the `active` file, says which key is current (another process may
            # have rotated since we read it).
            old = head.next_key_id if head.size else previous
            assert old is not None
            if old == new_key:
                raise KeyFileError(
                    f"the ledger already uses HMAC key {new_key}, the newest in "
                    f"{self.keyring.where}; put a new key first there (on every replica), then "
                    "rotate"
                )
            used.append(old)
            event = {"old_key_id": old, "new_key_id": new_key}
            entry = PendingEntry(EntryKind.KEY_ROTATION, recorded, event=event)
            return seal(ChainHead(head.size, head.head_hash, old), [entry], self.keyring)

        sealed = self.store.append(build)
        return KeyRotation(used[-1], new_key, sealed[0].seq)

    def checkpoint(self, now: float | None = None) -> SignedCheckpoint | None:
        """Sign the current size and head; None if the ledger is empty or already signed as is."""
        stamp = time.time() if now is None else now

        def sign(size: int, head_hash: bytes) -> str:
            return self.signer.sign(Checkpoint(self.origin, size, head_hash, int(stamp)).text())

        stored = self.store.add_checkpoint(sign, stamp)
        if stored is None:
            return None
        # Publish only what a power cut cannot take back: a checkpoint file that outlives the
        # entries it covers would make the ledger look truncated after a crash.
        self.store.sync_wal()
        signed = SignedCheckpoint(read_unverified(stored.note), stored.note)
        write_public_file(self.paths.latest_checkpoint, stored.note)
        return signed

    def latest_checkpoint(self) -> StoredCheckpoint | None:
        with self.store.reading() as view:
            checkpoints = view.checkpoints()
        return checkpoints[-1] if checkpoints else None

    def close(self) -> None:
        self.store.close()


def write_public_file(path: Path, text: str) -> None:
    """Atomically replace a world-readable file (checkpoints and public keys are public)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def trusted_keys(
    paths: EvidencePaths, public_keys: Sequence[Path], use_hmac: bool
) -> tuple[list[VerifierKey], HmacKeyring | None]:
    """The checkpoint keys a verifier trusts (the given files, else the store's own: `signing.pub`
    or `keys.signing`) and, when `use_hmac`, the HMAC keys (`keys.ledger_hmac`, else the keys
    directory when it exists). Raises KeyFileError for a key SecretRef that cannot be read."""
    verifiers: list[VerifierKey] = []
    for key_file in public_keys:
        verifiers.extend(read_verifier_keys(key_file))
    if not public_keys:
        verifiers.extend(local_verifiers(paths))
    return verifiers, existing_hmac_keys(paths) if use_hmac else None


def verify_ledger(
    paths: EvidencePaths,
    *,
    public_keys: Sequence[Path] = (),
    checkpoint_notes: Sequence[str] = (),
    use_hmac: bool = True,
    receipts_dir: Path | None = None,
    receipts_since: float | None = None,
    view_of: AbstractContextManager[LedgerView] | None = None,
) -> VerifyReport:
    """Verify a ledger (the SQLite file of `paths`, or the snapshot `view_of` opens: the fleet's
    PostgreSQL ledger) without writing to it or creating keys.

    Trusted public keys: the given files, else the store's own (`signing.pub` or `keys.signing`).
    HMACs are checked when `use_hmac` and the keys are there (the key holder's view).
    """
    verifiers, keyring = trusted_keys(paths, public_keys, use_hmac)
    with read_snapshot(paths.ledger) if view_of is None else view_of as view:
        ledger_id = view.ledger_id()
        notes = [cp.note for cp in view.checkpoints()] + list(checkpoint_notes)
        verifier = LedgerVerifier(
            verifiers=verifiers,
            keyring=keyring,
            origin=origin_for(ledger_id) if ledger_id else None,
        )
        report = verifier.verify(
            view.entries(), notes, receipts_dir=receipts_dir, receipts_since=receipts_since
        )
        report.durability = [(span.since_seq, span.level) for span in view.durability()]
        return report
