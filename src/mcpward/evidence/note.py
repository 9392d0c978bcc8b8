"""C2SP signed notes (c2sp.org/signed-note) with Ed25519: signing, verifier keys, verification.

Key ID = SHA-256(name || 0x0A || 0x01 || public key)[:4]; a signature line is
"— name base64(id || sig)".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ALG_ED25519 = 0x01
SIGNATURE_PREFIX = "\u2014 "  # em dash, space
MAX_SIGNATURES = 16
MAX_NOTE_BYTES = 64 * 1024


class NoteError(Exception):
    """A note that cannot be accepted. `reason` is one of: malformed, unknown_key, bad_signature."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _check_name(name: str) -> str:
    if not name or any(ch.isspace() or ch == "+" for ch in name):
        raise ValueError(f"key name {name!r} must be non-empty, without spaces or '+'")
    return name


def key_id(name: str, public: bytes) -> int:
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + public).digest()
    return int(struct.unpack(">I", digest[:4])[0])


@dataclass(frozen=True, slots=True)
class VerifierKey:
    """A public key as the note ecosystem writes it: name+hex(key id)+base64(0x01 || key)."""

    name: str
    public: bytes

    @property
    def key_id(self) -> int:
        return key_id(self.name, self.public)

    def encode(self) -> str:
        blob = base64.b64encode(bytes([ALG_ED25519]) + self.public).decode()
        return f"{self.name}+{self.key_id:08x}+{blob}"

    @classmethod
    def parse(cls, text: str) -> VerifierKey:
        parts = text.strip().split("+", 2)
        if len(parts) != 3:
            raise ValueError("a verifier key has the form name+keyid+base64key")
        name, hex_id, blob = parts
        _check_name(name)
        try:
            raw = base64.b64decode(blob, validate=True)
            wanted = int(hex_id, 16)
        except (binascii.Error, ValueError):
            raise ValueError("verifier key: bad hex key id or base64 key") from None
        if len(hex_id) != 8 or len(raw) != 33 or raw[0] != ALG_ED25519:
            raise ValueError("verifier key: only 32-byte Ed25519 keys (type 0x01) are supported")
        key = cls(name, raw[1:])
        if key.key_id != wanted:
            raise ValueError("verifier key: key id does not match the name and key")
        return key

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True, slots=True)
class NoteSigner:
    name: str
    private: Ed25519PrivateKey

    @classmethod
    def from_seed(cls, name: str, seed: bytes) -> NoteSigner:
        return cls(_check_name(name), Ed25519PrivateKey.from_private_bytes(seed))

    def verifier(self) -> VerifierKey:
        public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return VerifierKey(self.name, public)

    def sign(self, text: str) -> str:
        """The signed note: text (ending in a newline), a blank line, one signature line."""
        check_text(text)
        signature = self.private.sign(text.encode())
        blob = struct.pack(">I", self.verifier().key_id) + signature
        return f"{text}\n{SIGNATURE_PREFIX}{self.name} {base64.b64encode(blob).decode()}\n"


def check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise ValueError("note text must end with a newline")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise ValueError("note text must not contain control characters other than newline")


def open_note(note: str, verifiers: Sequence[VerifierKey]) -> str:
    """The note's text if a known key's signature verifies and none fails; else NoteError."""
    if len(note.encode()) > MAX_NOTE_BYTES:
        raise NoteError("malformed", "note is too large")
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        raise NoteError("malformed", "no blank line before the signatures, or no final newline")
    text = note[: cut + 1]
    try:
        check_text(text)
    except ValueError as exc:
        raise NoteError("malformed", str(exc)) from None
    lines = note[cut + 2 :].splitlines()
    if not lines or len(lines) > MAX_SIGNATURES:
        raise NoteError("malformed", f"a note needs 1 to {MAX_SIGNATURES} signature lines")
    known = {(v.name, v.key_id): v for v in verifiers}
    verified = False
    for line in lines:
        if not line.startswith(SIGNATURE_PREFIX):
            raise NoteError("malformed", "a signature line must start with an em dash and a space")
        name, _, blob = line[len(SIGNATURE_PREFIX) :].partition(" ")
        try:
            raw = base64.b64decode(blob, validate=True)
        except binascii.Error:
            raise NoteError("malformed", "a signature is not valid base64") from None
        if not name or len(raw) < 5:
            raise NoteError("malformed", "a signature line lacks a key name or a key id")
        verifier = known.get((name, int(struct.unpack(">I", raw[:4])[0])))
        if verifier is None:
            continue  # the spec: ignore signatures from unknown keys
        if not verifier.verify(text.encode(), raw[4:]):
            raise NoteError("bad_signature", f"the signature by {name} does not verify")
        verified = True
    if not verified:
        raise NoteError("unknown_key", "no signature by a trusted key")
    return text
