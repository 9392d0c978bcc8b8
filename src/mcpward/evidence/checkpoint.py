"""Checkpoints: the ledger's size and head hash as a signed note, C2SP tlog-checkpoint layout.

Body lines: origin, size, base64 head hash, then the extension line `time <unix seconds>`.
The head hash is the hash chain's head (not a Merkle root): verify it with `mcpward ledger verify`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpward.evidence.note import NoteSigner, VerifierKey, open_note
from mcpward.evidence.receipt import rfc3339

ORIGIN_PREFIX = "mcpward.local/ledger/"
CHECKPOINT_VERSION = 1
_ORIGIN = re.compile(r"^[!-~]{1,255}$")  # printable ASCII, no spaces
_SIZE = re.compile(r"^(0|[1-9][0-9]{0,18})$")
_TIME = re.compile(r"^time (0|[1-9][0-9]{0,12})$")


class CheckpointError(ValueError):
    """A checkpoint body that does not have the expected lines."""


def origin_for(ledger_id: str) -> str:
    return ORIGIN_PREFIX + ledger_id


@dataclass(frozen=True, slots=True)
class Checkpoint:
    origin: str
    size: int
    head_hash: bytes
    timestamp: int

    def text(self) -> str:
        head = base64.b64encode(self.head_hash).decode()
        return f"{self.origin}\n{self.size}\n{head}\ntime {self.timestamp}\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.split("\n")
        if len(lines) != 5 or lines[-1] != "":
            raise CheckpointError("a checkpoint has exactly four lines: origin, size, hash, time")
        origin, size, head, stamp = lines[:4]
        if not _ORIGIN.match(origin):
            raise CheckpointError("checkpoint origin must be printable ASCII without spaces")
        if not _SIZE.match(size):
            raise CheckpointError("checkpoint size must be a decimal number")
        try:
            digest = base64.b64decode(head, validate=True)
        except binascii.Error:
            raise CheckpointError("checkpoint hash is not base64") from None
        if len(digest) != 32:
            raise CheckpointError("checkpoint hash must be 32 bytes")
        matched = _TIME.match(stamp)
        if matched is None:
            raise CheckpointError("checkpoint's fourth line must be `time <unix seconds>`")
        return cls(origin, int(size), digest, int(matched.group(1)))


@dataclass(frozen=True, slots=True)
class SignedCheckpoint:
    checkpoint: Checkpoint
    note: str


def sign_checkpoint(checkpoint: Checkpoint, signer: NoteSigner) -> SignedCheckpoint:
    return SignedCheckpoint(checkpoint, signer.sign(checkpoint.text()))


def open_checkpoint(note: str, verifiers: Sequence[VerifierKey]) -> Checkpoint:
    """The checkpoint if a trusted key signed it. Raises NoteError or CheckpointError."""
    return Checkpoint.parse(open_note(note, verifiers))


def read_unverified(note: str) -> Checkpoint:
    """The body of a note without checking signatures (for display only)."""
    cut = note.rfind("\n\n")
    if cut < 0:
        raise CheckpointError("not a signed note: no blank line before the signatures")
    return Checkpoint.parse(note[: cut + 1])


def checkpoint_document(
    signed: SignedCheckpoint, signer: VerifierKey | None = None
) -> dict[str, Any]:
    """The checkpoint as JSON (schema: `mcpward schema checkpoint`)."""
    cp = signed.checkpoint
    return {
        "version": CHECKPOINT_VERSION,
        "origin": cp.origin,
        "size": cp.size,
        "head_hash": cp.head_hash.hex(),
        "time": rfc3339(cp.timestamp),
        "key_name": signer.name if signer else None,
        "key_id": f"{signer.key_id:08x}" if signer else None,
        "note": signed.note,
    }


def load_checkpoint_file(path: Path) -> str:
    """A checkpoint's signed note from a file holding either the note or its JSON document."""
    raw = path.read_text(encoding="utf-8")
    if raw.lstrip().startswith("{"):
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CheckpointError(f"{path}: not valid JSON: {exc}") from None
        note = document.get("note") if isinstance(document, dict) else None
        if not isinstance(note, str):
            raise CheckpointError(f"{path}: the JSON document has no `note` string")
        return note
    return raw


def read_published_note(path: Path) -> str | None:
    """The note a gateway last wrote to its state directory (`checkpoint.latest`), or None when
    there is none. Its signature is checked by the verifier like any other checkpoint's."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
