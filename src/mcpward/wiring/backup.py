"""Per wired config file: its bytes before the first wire (backup) and what was wired (marker).

Both live in <state_dir>/wiring (0700 directory, 0600 files: a config's env holds secrets).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpward.wiring.files import replace_atomically
from mcpward.wiring.rewrite import WiredRecord

WIRING_DIR = "wiring"
MARKER_VERSION = 1


class WiringStateError(Exception):
    """A marker or backup that is missing, unreadable or does not match its recorded digest."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class WiringMarker:
    client: str
    config_path: str
    original_sha256: str  # the backup: the file before the first wire
    wired_sha256: str  # the file as the last wire wrote it
    wired_at: float
    records: list[WiredRecord] = field(default_factory=list)
    pristine: bool = True  # every wire started from the original or from our own last write

    def to_json(self) -> dict[str, Any]:
        return {
            "version": MARKER_VERSION,
            "client": self.client,
            "config_path": self.config_path,
            "original_sha256": self.original_sha256,
            "wired_sha256": self.wired_sha256,
            "wired_at": self.wired_at,
            "pristine": self.pristine,
            "records": [r.to_json() for r in self.records],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WiringMarker:
        if data.get("version") != MARKER_VERSION:
            raise ValueError(f"marker version {data.get('version')!r}")
        return cls(
            client=str(data["client"]),
            config_path=str(data["config_path"]),
            original_sha256=str(data["original_sha256"]),
            wired_sha256=str(data["wired_sha256"]),
            wired_at=float(data["wired_at"]),
            records=[WiredRecord.from_json(r) for r in data["records"]],
            pristine=bool(data.get("pristine", False)),
        )


class WiringStore:
    """Markers and backups, one pair per (client, config file)."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = state_dir / WIRING_DIR

    def _stem(self, client: str, config: Path) -> Path:
        digest = hashlib.sha256(str(config.resolve()).encode()).hexdigest()[:16]
        return self.directory / f"{client}-{digest}"

    def marker_path(self, client: str, config: Path) -> Path:
        return self._stem(client, config).with_suffix(".json")

    def backup_path(self, client: str, config: Path) -> Path:
        return self._stem(client, config).with_suffix(".orig")

    def load(self, client: str, config: Path) -> WiringMarker | None:
        path = self.marker_path(client, config)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return WiringMarker.from_json(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise WiringStateError(f"wiring marker {path} is unusable: {exc}") from None

    def backup(self, client: str, config: Path, marker: WiringMarker) -> bytes:
        """The original bytes, checked against the marker's digest."""
        path = self.backup_path(client, config)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise WiringStateError(f"backup {path} cannot be read ({exc.strerror})") from None
        if sha256(data) != marker.original_sha256:
            raise WiringStateError(f"backup {path} does not match its recorded SHA-256")
        return data

    def save(self, marker: WiringMarker, config: Path, original: bytes | None) -> Path:
        """Write the backup (first wire only) and then the marker; returns the backup's path."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        backup = self.backup_path(marker.client, config)
        if original is not None:
            replace_atomically(backup, original, 0o600)
        text = json.dumps(marker.to_json(), indent=2, ensure_ascii=False) + "\n"
        replace_atomically(self.marker_path(marker.client, config), text.encode(), 0o600)
        return backup

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One wire/unwire at a time per state directory (another waits for this one)."""
        self.directory.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.directory.parent / f".{WIRING_DIR}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def remove(self, client: str, config: Path) -> None:
        for path in (self.marker_path(client, config), self.backup_path(client, config)):
            path.unlink(missing_ok=True)

    def markers(self) -> list[WiringMarker]:
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append(WiringMarker.from_json(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found


def new_marker(client: str, config: Path, original: bytes, wired: bytes) -> WiringMarker:
    return WiringMarker(client, str(config.resolve()), sha256(original), sha256(wired), time.time())
