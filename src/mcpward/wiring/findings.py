"""What a check of `mcpward doctor` reports: its level, subject, message and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Level(str, Enum):
    OK = "ok"
    NOTE = "note"  # worth knowing, nothing broken
    WARN = "warn"  # works, but a protection is off or a person must act (an open hold)
    FIX = "fix"  # must be fixed: doctor exits non-zero


@dataclass(frozen=True, slots=True)
class Finding:
    level: Level
    subject: str
    message: str
    fix: str = ""
