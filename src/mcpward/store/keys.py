"""Secret key files in the state directory: created once, atomically, readable by the owner only."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


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
