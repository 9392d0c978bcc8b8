"""Walking a person through one held call: the banner, the diff against the pin, the accept.

For `mcpward demo` (and any front end holding a -32010 error): it reads the same pin store the
gateway writes and accepts exactly the contract that was held, as `mcpward pins accept` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from mcpward.contracts.holds import Commands
from mcpward.contracts.model import ItemKind
from mcpward.contracts.render import hold_diff_view
from mcpward.contracts.review import ReviewError, accept, diff_holds
from mcpward.store.pins_sqlite import SqlitePinStore


def _target(data: Mapping[str, Any]) -> tuple[str, ItemKind, str]:
    try:
        return str(data["upstream"]), ItemKind(data.get("item_kind", "tool")), str(data["tool"])
    except (KeyError, ValueError):
        raise ReviewError(
            "not the data of a contract HOLD (-32010) from the rug_pull guard"
        ) from None


def show_held_call(console: Console, state_dir: Path, data: Mapping[str, Any]) -> None:
    """Print the HOLD banner and the full diff of the held contract against its pin."""
    upstream, kind, name = _target(data)
    store = SqlitePinStore(state_dir)
    try:
        diffs = [
            d
            for d in diff_holds(store, upstream, name, kind)
            if d.hold.new_hash == data.get("new_hash")
        ]
        if not diffs:
            raise ReviewError(f"the hold on {kind.value} {name!r} is no longer current")
        console.print(hold_diff_view(diffs[0], Commands(("--state-dir", str(state_dir)))))
    finally:
        store.close()


def accept_held_call(state_dir: Path, data: Mapping[str, Any]) -> str:
    """Re-pin the held contract (only if it is still the one that was held); returns the
    equivalent command line."""
    upstream, kind, name = _target(data)
    new_hash = data.get("new_hash")
    store = SqlitePinStore(state_dir)
    try:
        accept(store, upstream, name=name, kind=kind, hash_=str(new_hash) if new_hash else None)
    finally:
        store.close()
    return str(data.get("accept", ""))
