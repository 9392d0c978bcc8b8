"""The ledger's keys: HMAC keys (one active, old ones kept for verification) and the Ed25519 signer.

Key ids are derived from the key bytes, so a swapped key file can never pass for the original.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from mcpward.evidence.note import NoteSigner, VerifierKey
from mcpward.secret_refs import SecretRef
from mcpward.store.keys import KeyFileError, key_from_ref, load_or_create_secret, read_secret

HMAC_PREFIX = "hmac-"
HMAC_SUFFIX = ".key"
ACTIVE_FILE = "hmac.active"
SIGNING_FILE = "signing.key"
SIGNER_NAME_PREFIX = "mcpward.local/"


def hmac_key_id(key: bytes) -> str:
    """16 hex digits naming a key; a domain-separated hash, so it reveals nothing of the key."""
    return hashlib.sha256(b"mcpward-ledger-hmac-key-id\x00" + key).hexdigest()[:16]


@functools.lru_cache(maxsize=16)
def _keyed(key: bytes) -> hmac.HMAC:
    return hmac.new(key, digestmod=hashlib.sha256)


def entry_hmac(key: bytes, entry_hash: bytes) -> bytes:
    """HMAC-SHA-256 from a copy of the keyed state. Not `hmac.digest`: that one-shot call
    releases the interpreter lock every time, and with the event loop wanting the lock each
    release costs the ledger writer a thread switch (and the key is set up once, not per entry).
    """
    mac = _keyed(key).copy()
    mac.update(entry_hash)
    return mac.digest()


def _write_text_atomic(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class HmacKeyring:
    """All HMAC keys in a directory, by derived key id. The chain decides which key is current."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._keys: dict[str, bytes] = {}
        self.problems: list[str] = []
        self.reload()

    @property
    def where(self) -> str:
        """Where the keys come from, for messages."""
        return str(self.directory)

    def reload(self) -> None:
        self._keys.clear()
        self.problems.clear()
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob(f"{HMAC_PREFIX}*{HMAC_SUFFIX}")):
            try:
                key = read_secret(path)
            except (KeyFileError, OSError) as exc:
                self.problems.append(str(exc))
                continue
            derived = hmac_key_id(key)
            if path.name != f"{HMAC_PREFIX}{derived}{HMAC_SUFFIX}":
                self.problems.append(f"{path.name} holds key {derived}, not the key its name says")
            self._keys[derived] = key

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, key_id: str) -> bytes | None:
        return self._keys.get(key_id)

    def get_fresh(self, key_id: str) -> bytes | None:
        """Like get, re-reading the directory once on a miss (another process may have rotated)."""
        key = self._keys.get(key_id)
        if key is None:
            self.reload()
            key = self._keys.get(key_id)
        return key

    def ids(self) -> list[str]:
        return sorted(self._keys)

    def active_id(self) -> str | None:
        """The key id recorded as active (used for a new, empty ledger)."""
        path = self.directory / ACTIVE_FILE
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        return text if text in self._keys else None

    def ensure_active(self) -> str:
        """The active key id, creating the first key (mode 0600) on first run."""
        current = self.active_id()
        if current is not None:
            return current
        return self.create()

    def create(self) -> str:
        """A new random key; it becomes the active one. Old keys stay for verification."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.directory / f".{HMAC_PREFIX}new-{os.getpid()}{HMAC_SUFFIX}"
        if tmp.exists():
            tmp.unlink()
        key = load_or_create_secret(tmp)
        key_id = hmac_key_id(key)
        os.replace(tmp, self.directory / f"{HMAC_PREFIX}{key_id}{HMAC_SUFFIX}")
        self._keys[key_id] = key
        self.set_active(key_id)
        return key_id

    def rotation_target(self) -> str:
        """The key a rotation moves the ledger to: a new one."""
        return self.create()

    def set_active(self, key_id: str) -> None:
        if key_id not in self._keys:
            raise KeyFileError(f"HMAC key {key_id} is not in {self.directory}")
        _write_text_atomic(self.directory / ACTIVE_FILE, key_id + "\n", 0o600)


class ConfiguredHmacKeys(HmacKeyring):
    """HMAC keys given by SecretRefs (`keys.ledger_hmac`), newest first: read once, never
    created. A new ledger starts with the first; a rotation moves the ledger to the first."""

    def __init__(self, refs: Sequence[SecretRef], setting: str = "keys.ledger_hmac") -> None:
        if not refs:
            raise KeyFileError(f"{setting} names no key")
        self.setting = setting
        self._keys = {}
        self.problems = []
        for index, ref in enumerate(refs):
            name = f"{setting}[{index}]"
            key = key_from_ref(ref, name)
            key_id = hmac_key_id(key)
            if key_id in self._keys:
                first = list(self._keys).index(key_id)
                raise KeyFileError(f"{name} is the same key as {setting}[{first}]")
            self._keys[key_id] = key
        self._first = next(iter(self._keys))

    @property
    def where(self) -> str:
        return self.setting

    def listed(self) -> list[str]:
        """The key ids in the configured order (newest first)."""
        return list(self._keys)

    def reload(self) -> None:
        """Nothing to re-read: the keys are the process's configuration."""

    def active_id(self) -> str:
        return self._first

    def ensure_active(self) -> str:
        return self._first

    def create(self) -> str:
        raise KeyFileError(
            f"{self.setting} gives the HMAC keys, so none is created here: put a new key first "
            f"in {self.setting} on every replica, then run `mcpward ledger rotate-key`"
        )

    def rotation_target(self) -> str:
        return self._first

    def set_active(self, key_id: str) -> None:
        raise KeyFileError(f"{self.setting}: the first key listed is the active one")


def signer_name(public: bytes) -> str:
    return SIGNER_NAME_PREFIX + hashlib.sha256(public).hexdigest()[:16]


def signer_from_seed(seed: bytes) -> NoteSigner:
    """The Ed25519 checkpoint signer of a 32-byte seed, named after its public key."""
    private = NoteSigner.from_seed("x", seed).private
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return NoteSigner.from_seed(signer_name(public), seed)


def signer_from_ref(ref: SecretRef, setting: str = "keys.signing") -> NoteSigner:
    """The signer whose seed a SecretRef names (read, never created; no `.pub` is written)."""
    return signer_from_seed(key_from_ref(ref, setting))


def load_or_create_signer(keys_dir: Path, public_key_file: Path) -> NoteSigner:
    """The Ed25519 checkpoint signer; writes its public verifier key next to the keys on first run.

    A `.pub` that does not match the private key means one of them was replaced: refuse.
    """
    keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    signer = signer_from_seed(load_or_create_secret(keys_dir / SIGNING_FILE))
    encoded = signer.verifier().encode()
    try:
        existing = public_key_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        _write_text_atomic(public_key_file, encoded + "\n", 0o644)
        return signer
    if existing != encoded:
        raise KeyFileError(
            f"{public_key_file} does not match {keys_dir / SIGNING_FILE}; one of them was "
            "replaced. "
            "Restore the original pair (checkpoints already published name the original key)."
        )
    return signer


def read_verifier_keys(path: Path) -> list[VerifierKey]:
    """Verifier keys from a file: one `name+id+key` per line (blank and # lines skipped)."""
    keys = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.append(VerifierKey.parse(line))
    if not keys:
        raise ValueError(f"{path} holds no verifier key")
    return keys
