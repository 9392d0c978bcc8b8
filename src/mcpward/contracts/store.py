"""The pin store interface: what the gate and the CLI need from a backend (SQLite by default).

Every write is one atomic unit; a load reports rows that fail verification instead of trusting them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpward.contracts.model import HoldRecord, ItemKind, Pin, Verdict

Key = tuple[ItemKind, str]


class PinStoreError(Exception):
    """The store cannot be opened or written (I/O, key file, schema)."""


@dataclass(slots=True)
class UpstreamPins:
    """One upstream's pins and holds as loaded. `tampered` says why they cannot be trusted."""

    upstream: str
    kinds: set[ItemKind] = field(default_factory=set)  # item kinds with a baseline
    pins: dict[Key, Pin] = field(default_factory=dict)
    holds: dict[Key, HoldRecord] = field(default_factory=dict)
    tampered: str | None = None

    @property
    def known(self) -> bool:
        """The upstream has a baseline for at least one kind of item."""
        return bool(self.kinds)


class PinStore(Protocol):
    """A backend for pins and holds. Implementations must make each call atomic."""

    def load(self, upstream: str) -> UpstreamPins:
        """Pins and holds of one upstream, verified. Never raises for tampering: sets `tampered`."""
        ...

    def upstreams(self) -> list[str]:
        """Every upstream with a baseline, sorted."""
        ...

    def write(
        self,
        upstream: str,
        *,
        put: Sequence[Pin] = (),
        delete: Iterable[Key] = (),
        put_holds: Sequence[HoldRecord] = (),
        delete_holds: Iterable[Key] = (),
        baseline_kinds: Iterable[ItemKind] = (),
    ) -> None:
        """Apply pin and hold changes of one upstream in one transaction. `baseline_kinds`
        records those kinds as baselined (even when the upstream lists none of them)."""
        ...

    def forget(self, upstream: str) -> int:
        """Delete an upstream's baseline, pins and holds; returns how many pins were removed."""
        ...

    def holds(self, upstream: str | None = None) -> list[HoldRecord]:
        """Current holds (all upstreams, or one), verified rows only."""
        ...

    def changed(self) -> bool:
        """True if another process committed to the store since this one last looked."""
        ...

    def location(self) -> str:
        """Where the store lives, for messages."""
        ...

    def close(self) -> None: ...


def pin_to_json(pin: Pin) -> dict[str, Any]:
    return {
        "upstream": pin.upstream,
        "kind": pin.kind.value,
        "name": pin.name,
        "hash": pin.hash,
        "contract": pin.contract,
        "pinned_at": pin.pinned_at,
        "source": pin.source,
    }


def pin_from_json(data: dict[str, Any]) -> Pin:
    return Pin(
        upstream=str(data["upstream"]),
        kind=ItemKind(data["kind"]),
        name=str(data["name"]),
        hash=str(data["hash"]),
        contract=data["contract"],
        pinned_at=float(data["pinned_at"]),
        source=str(data.get("source", "import")),
    )


def hold_to_json(hold: HoldRecord) -> dict[str, Any]:
    return {
        "upstream": hold.upstream,
        "kind": hold.kind.value,
        "name": hold.name,
        "old_hash": hold.old_hash,
        "new_hash": hold.new_hash,
        "change_kinds": list(hold.change_kinds),
        "changes": list(hold.changes),
        "posture": hold.posture,
        "verdict": hold.verdict.value,
        "reason": hold.reason,
        "first_seen": hold.first_seen,
        "last_seen": hold.last_seen,
        "new_contract": hold.new_contract,
        "enforced": hold.enforced,
        "extra": dict(hold.extra),
    }


def hold_from_json(data: dict[str, Any]) -> HoldRecord:
    return HoldRecord(
        upstream=str(data["upstream"]),
        kind=ItemKind(data["kind"]),
        name=str(data["name"]),
        old_hash=data.get("old_hash"),
        new_hash=data.get("new_hash"),
        change_kinds=[str(k) for k in data.get("change_kinds", [])],
        changes=list(data.get("changes", [])),
        posture=str(data.get("posture", "guard")),
        verdict=Verdict(data.get("verdict", "HOLD")),
        reason=str(data.get("reason", "drift")),
        first_seen=float(data.get("first_seen", 0.0)),
        last_seen=float(data.get("last_seen", 0.0)),
        new_contract=data.get("new_contract"),
        enforced=bool(data.get("enforced", True)),
        extra=dict(data.get("extra", {})),
    )
