"""Human review of holds: diff a held contract against its pin, accept it, or forget pins.

Used by `mcpward pins ...` and by the demo. A running gateway picks the result up on the next
call that meets the hold (it re-reads the store when another process changed it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from mcpward.contracts.classify import classify_item
from mcpward.contracts.extract import DEEP_PREFIX, contract_hash
from mcpward.contracts.model import HoldRecord, ItemKind, Pin
from mcpward.contracts.store import Key, PinStore
from mcpward.contracts.taxonomy import Change, ChangeKind

GONE = "gone"  # the --hash value that accepts a removal
_RECORDED_ONLY = {ChangeKind.INJECTION_MARKER_ADDED.value, ChangeKind.PIN_STORE_TAMPERED.value}


class ReviewError(Exception):
    """A review command that cannot be carried out; the message says why and what to do."""


@dataclass(slots=True)
class HoldDiff:
    hold: HoldRecord
    pin: Pin | None
    changes: list[Change]


def _select(
    holds: list[HoldRecord], name: str | None, kind: ItemKind, hash_: str | None, every: bool
) -> list[HoldRecord]:
    if every:
        return holds
    chosen = holds
    if name is not None:
        chosen = [h for h in chosen if h.kind is kind and h.name == name]
    elif kind is not ItemKind.TOOL:
        chosen = [h for h in chosen if h.kind is kind]
    if hash_ is not None:
        chosen = [h for h in chosen if (h.new_hash or GONE) == hash_]
    return chosen


def diff_holds(
    store: PinStore, upstream: str, name: str | None = None, kind: ItemKind = ItemKind.TOOL
) -> list[HoldDiff]:
    """The full diff (with before/after values) of each selected hold against its pin."""
    loaded = store.load(upstream)
    if loaded.tampered:
        raise ReviewError(
            f"the pins of upstream {upstream!r} fail verification ({loaded.tampered}); "
            f"inspect with `mcpward pins show {upstream}`, "
            f"reset with `mcpward pins revoke {upstream} --all`"
        )
    holds = _select(
        list(loaded.holds.values()), name, kind, None, every=name is None and kind is ItemKind.TOOL
    )
    out = []
    for hold in holds:
        pin = loaded.pins.get(hold.key)
        changes = classify_item(hold.kind, pin.contract if pin else None, hold.new_contract)
        # the marker scan ran when the hold was recorded; its findings are part of the hold
        changes += [
            Change(ChangeKind(c["kind"]), c.get("path", ""), c.get("detail", ""))
            for c in hold.changes
            if c.get("kind") in _RECORDED_ONLY
        ]
        out.append(HoldDiff(hold, pin, changes))
    return out


def accept(
    store: PinStore,
    upstream: str,
    *,
    name: str | None = None,
    kind: ItemKind = ItemKind.TOOL,
    hash_: str | None = None,
    every: bool = False,
    by: str | None = None,
) -> list[HoldRecord]:
    """Re-pin the held contracts (exactly as they were classified), recording who accepted
    them (`by`). Returns what was accepted."""
    if name is None and hash_ is None and not every and kind is ItemKind.TOOL:
        raise ReviewError("name a tool, give --hash, or pass --all")
    loaded = store.load(upstream)
    if loaded.tampered:
        raise ReviewError(
            f"the pins of upstream {upstream!r} fail verification ({loaded.tampered}); accepting "
            f"would trust them. Reset instead: mcpward pins revoke {upstream} --all"
        )
    chosen = _select(list(loaded.holds.values()), name, kind, hash_, every)
    if not chosen:
        raise ReviewError(f"no matching hold on upstream {upstream!r} (see `mcpward holds`)")
    now = time.time()
    puts: list[Pin] = []
    deletes: list[Key] = []
    for hold in chosen:
        if hold.new_contract is None:
            deletes.append(hold.key)
            continue
        actual = contract_hash(hold.new_contract)
        if hold.new_hash is None or (
            actual != hold.new_hash and not hold.new_hash.startswith(DEEP_PREFIX)
        ):
            raise ReviewError(
                f"the held contract of {hold.kind.value} {hold.name!r} does not match its hash"
            )
        puts.append(
            Pin(
                upstream,
                hold.kind,
                hold.name,
                hold.new_hash,
                hold.new_contract,
                now,
                f"accept by {by}" if by else "accept",
            )
        )
    store.write(upstream, put=puts, delete=deletes, delete_holds=[h.key for h in chosen])
    return chosen


def revoke(
    store: PinStore,
    upstream: str,
    *,
    name: str | None = None,
    kind: ItemKind = ItemKind.TOOL,
    every: bool = False,
) -> int:
    """Forget pins: one item (it will be seen as new), or the whole upstream (re-pinned on first
    sight). Returns how many pins were removed."""
    if every:
        return store.forget(upstream)
    if name is None:
        raise ReviewError("name the item to revoke, or pass --all")
    loaded = store.load(upstream)
    if loaded.tampered:
        raise ReviewError(
            f"the pins of upstream {upstream!r} fail verification; only `--all` can reset them"
        )
    key = (kind, name)
    if key not in loaded.pins and key not in loaded.holds:
        raise ReviewError(f"upstream {upstream!r} has no pin for {kind.value} {name!r}")
    store.write(
        upstream,
        delete=[key] if key in loaded.pins else [],
        delete_holds=[key] if key in loaded.holds else [],
    )
    return 1 if key in loaded.pins else 0
