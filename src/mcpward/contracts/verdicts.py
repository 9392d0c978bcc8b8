"""Screen verdicts by contract hash: the local record of `mcpward screen`, and files of them signed
with the operator's Ed25519 key (C2SP signed note) that another operator can import and check.

An imported verdict can only make a screen stricter; it never changes a pin or lowers a HOLD.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpward.evidence.note import (
    SIGNATURE_PREFIX,
    NoteError,
    NoteSigner,
    VerifierKey,
    open_note,
)

HEADER = "mcpward screen verdicts v1"
FILE_NAME = "verdicts.jsonl"
STRICTNESS = {"ALLOW": 0, "REVIEW": 1, "UNVERIFIED": 1, "DENY": 2}
MAX_IMPORT = 100_000


class VerdictFileError(Exception):
    """A verdict file that is not signed by a trusted key, altered, or malformed."""


@dataclass(frozen=True, slots=True)
class SharedVerdict:
    upstream: str
    contracts: dict[str, str]  # "kind:name" -> contract hash
    verdict: str
    screened_at: str
    source: str = "local"  # local, or "imported from <key name>"

    def key(self) -> str:
        """The screened contract set, whatever upstream id it was screened under."""
        return json.dumps(sorted(self.contracts.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "upstream": self.upstream,
            "contracts": self.contracts,
            "verdict": self.verdict,
            "screened_at": self.screened_at,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Any, source: str | None = None) -> SharedVerdict:
        if not isinstance(data, dict) or data.get("verdict") not in STRICTNESS:
            raise VerdictFileError("a verdict entry is malformed")
        contracts = data.get("contracts")
        if not isinstance(contracts, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in contracts.items()
        ):
            raise VerdictFileError("a verdict entry's contracts are malformed")
        return cls(
            str(data.get("upstream", "")),
            dict(contracts),
            str(data["verdict"]),
            str(data.get("screened_at", "")),
            source or str(data.get("source", "local")),
        )


class VerdictStore:
    """`<state_dir>/verdicts.jsonl`: one verdict per line, appended."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / FILE_NAME

    def all(self) -> list[SharedVerdict]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [SharedVerdict.from_json(json.loads(line)) for line in lines if line.strip()]

    def add(self, verdicts: Iterable[SharedVerdict]) -> int:
        rows = [json.dumps(v.to_json(), sort_keys=True) + "\n" for v in verdicts]
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.writelines(rows)
            handle.flush()
            os.fsync(handle.fileno())
        return len(rows)

    def strictest(self, contracts: dict[str, str]) -> SharedVerdict | None:
        """The strictest imported verdict on exactly this contract set, if any."""
        wanted = json.dumps(sorted(contracts.items()))
        found = [v for v in self.all() if v.source != "local" and v.key() == wanted]
        return max(found, key=lambda v: STRICTNESS[v.verdict], default=None)


def export_note(verdicts: Sequence[SharedVerdict], signer: NoteSigner) -> str:
    """The local verdicts as a signed note: a header line, then one JSON line each."""
    lines = [HEADER] + [
        json.dumps({**v.to_json(), "source": "local"}, sort_keys=True, ensure_ascii=True)
        for v in verdicts
    ]
    return signer.sign("\n".join(lines) + "\n")


def import_note(note: str, trusted: Sequence[VerifierKey]) -> list[SharedVerdict]:
    """The verdicts of a note signed by a trusted key; VerdictFileError otherwise."""
    try:
        text = open_note(note, trusted)
    except NoteError as exc:
        raise VerdictFileError(f"the verdict file does not verify: {exc}") from None
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        raise VerdictFileError("not an mcpward verdict file (wrong header)")
    if len(lines) - 1 > MAX_IMPORT:
        raise VerdictFileError(f"more than {MAX_IMPORT} verdicts")
    signer = _signer_name(note)
    try:
        return [
            SharedVerdict.from_json(json.loads(line), source=f"imported from {signer}")
            for line in lines[1:]
        ]
    except json.JSONDecodeError:
        raise VerdictFileError("a verdict entry is not JSON") from None


def _signer_name(note: str) -> str:
    last = note.rstrip("\n").rsplit("\n", 1)[-1]
    if not last.startswith(SIGNATURE_PREFIX):
        return "?"
    return last.removeprefix(SIGNATURE_PREFIX).split(" ", 1)[0]
