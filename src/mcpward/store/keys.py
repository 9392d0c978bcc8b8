"""Secret keys: files in the keys directory (created once, atomically, readable by the owner
only), or one key given by a SecretRef (an environment variable or a file, read, never created)."""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
from pathlib import Path

from mcpward.secret_refs import SecretRef, SecretUnavailable, resolve_secret

_HEX = re.compile(r"^[0-9a-fA-F]+$")


class KeyFileError(Exception):
    """A key file that exists but is unusable (wrong size, too open permissions)."""


def load_or_create_secret(path: Path, nbytes: int = 32) -> bytes:
    """Read a raw secret, or create it (mode 0600) if it does not exist yet."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return read_secret(path, nbytes)
    try:
        os.write(fd, secrets.token_bytes(nbytes))
        os.fsync(fd)
    finally:
        os.close(fd)
    return read_secret(path, nbytes)


def read_secret(path: Path, nbytes: int = 32) -> bytes:
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise KeyFileError(f"{path} is readable by others (mode {mode:o}); run: chmod 600 {path}")
    data = path.read_bytes()
    if len(data) != nbytes:
        raise KeyFileError(f"{path} holds {len(data)} bytes, expected {nbytes}; it is damaged")
    return data


def decode_key(text: str, nbytes: int = 32) -> bytes:
    """A key written as hex or base64 (standard or URL-safe, padding optional). The message of
    the ValueError says what is wrong, never what the text holds."""
    text = text.strip()
    if not text:
        raise ValueError("it is empty")
    if len(text) == 2 * nbytes and _HEX.match(text):
        return bytes.fromhex(text)
    try:
        padded = text + "=" * (-len(text) % 4)
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"it is neither {2 * nbytes} hex digits nor base64 of {nbytes} bytes"
        ) from None
    if len(data) != nbytes:
        raise ValueError(f"it decodes to {len(data)} bytes, expected {nbytes}")
    return data


def ref_source(ref: SecretRef) -> str:
    """Where a SecretRef reads from (`env NAME` or `file PATH`), for messages; never the value."""
    return f"env {ref.env}" if ref.env is not None else f"file {ref.file}"


def key_from_ref(ref: SecretRef, name: str, nbytes: int = 32) -> bytes:
    """The key a SecretRef names; KeyFileError says which setting and source, never the value."""
    source = ref_source(ref)
    try:
        return decode_key(resolve_secret(ref), nbytes)
    except SecretUnavailable as exc:
        raise KeyFileError(f"{name}: {exc}") from None
    except ValueError as exc:
        raise KeyFileError(f"{name} ({source}) is not a usable key: {exc}") from None
