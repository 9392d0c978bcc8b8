"""The hash chain: an entry's canonical bytes, its hash SHA-256(prev hash || bytes), and its HMAC.

Entry 0 links to 32 zero bytes. Entry n+1 uses entry n's key, or the new key after a rotation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpward.evidence.keyring import HmacKeyring, entry_hmac
from mcpward.evidence.receipt import Receipt, rfc3339
from mcpward.evidence.vocabulary import EntryKind
from mcpward.protocol.canonical import canonical_bytes

ZERO_HASH = bytes(32)


class ChainError(Exception):
    """The chain cannot be extended (a key it needs is missing, or its head is unreadable)."""


@dataclass(frozen=True, slots=True)
class ChainHead:
    """Where the next entry goes: its seq, the hash it links to, and the key it must use."""

    size: int
    head_hash: bytes = ZERO_HASH
    next_key_id: str | None = None  # None: empty ledger, the keyring's active key starts it

    @classmethod
    def after(cls, size: int, head_hash: bytes, last_body: bytes | None) -> ChainHead:
        if size == 0 or last_body is None:
            return cls(0)
        try:
            last = orjson.loads(last_body)
            return cls(size, head_hash, next_key_id(last))
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise ChainError(
                f"the last ledger entry (seq {size - 1}) is unreadable: {exc}"
            ) from None


@dataclass(frozen=True, slots=True)
class SealedEntry:
    """An entry ready to store: the canonical body plus its chain hash and HMAC."""

    seq: int
    body: bytes
    entry_hash: bytes
    hmac: bytes
    recorded_at: float
    next_key_id: str | None = None  # the key the entry after this one uses (known when sealed)

    def head_after(self) -> ChainHead:
        """The chain head once this entry is the last one."""
        if self.next_key_id is not None:
            return ChainHead(self.seq + 1, self.entry_hash, self.next_key_id)
        return ChainHead.after(self.seq + 1, self.entry_hash, self.body)


@dataclass(slots=True)
class PendingEntry:
    """A receipt (as canonical bytes) or an event waiting for its place in the chain.

    Only the receipt's bytes are queued, not its dict: a backlog of thousands of receipts then
    costs the garbage collector nothing to traverse.
    """

    kind: EntryKind
    recorded_at: float
    receipt_bytes: bytes = b""
    receipt_hash: str = ""
    event: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_receipt(cls, receipt: Receipt, recorded_at: float) -> PendingEntry:
        return cls(EntryKind.RECEIPT, recorded_at, receipt.canonical, receipt.sha256)


def next_key_id(entry: dict[str, Any]) -> str:
    """The key the entry after `entry` must be sealed with."""
    if entry["kind"] == EntryKind.KEY_ROTATION.value:
        return str(entry["event"]["new_key_id"])
    return str(entry["key_id"])


def chain_hash(prev: bytes, body: bytes) -> bytes:
    return hashlib.sha256(prev + body).digest()


def entry_body(seq: int, pending: PendingEntry, key_id: str) -> bytes:
    """The entry's canonical JSON. Receipt entries embed the receipt's canonical bytes as-is."""
    if pending.kind is EntryKind.RECEIPT:
        if not pending.receipt_bytes or len(pending.receipt_hash) != 64:
            raise ValueError("a receipt entry needs the receipt's bytes and hash")
        # Same bytes as canonical_bytes() of the whole entry (keys already in canonical order);
        # splicing avoids re-normalising the receipt (tests/evidence/test_chain.py pins this).
        return b"".join(
            (
                b'{"key_id":',
                orjson.dumps(key_id),
                b',"kind":"receipt","receipt":',
                pending.receipt_bytes,
                b',"receipt_hash":"',
                pending.receipt_hash.encode(),
                b'","seq":',
                str(seq).encode(),
                b',"time":"',
                rfc3339(pending.recorded_at).encode(),
                b'"}',
            )
        )
    return canonical_bytes(
        {
            "seq": seq,
            "kind": pending.kind.value,
            "time": rfc3339(pending.recorded_at),
            "key_id": key_id,
            "event": pending.event,
        }
    )


def seal(
    head: ChainHead, pending: Sequence[PendingEntry], keyring: HmacKeyring
) -> list[SealedEntry]:
    """Chain `pending` onto `head`. Raises ChainError if a needed HMAC key is not in the keyring."""
    key_id = head.next_key_id
    if key_id is None:  # an empty ledger starts with the active key
        keyring.reload()
        key_id = keyring.active_id()
    if key_id is None:
        raise ChainError(f"no active HMAC key in {keyring.where}")
    prev = head.head_hash
    sealed: list[SealedEntry] = []
    seq = head.size
    key: bytes | None = None  # the key of `key_id`, fetched once per key, not once per entry
    for item in pending:
        if key is None:
            key = keyring.get_fresh(key_id)
            if key is None:
                raise ChainError(
                    f"HMAC key {key_id} (which the ledger's last entry names) is missing from "
                    f"{keyring.where}; restore it from backup: the ledger cannot be extended "
                    "without it"
                )
        body = entry_body(seq, item, key_id)
        digest = chain_hash(prev, body)
        mac = entry_hmac(key, digest)  # a rotation entry is sealed with the old key
        if item.kind is EntryKind.KEY_ROTATION:
            key_id, key = str(item.event["new_key_id"]), None
        sealed.append(SealedEntry(seq, body, digest, mac, item.recorded_at, key_id))
        prev = digest
        seq += 1
    return sealed
