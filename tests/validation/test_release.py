"""How a CLEARED verdict written by another process reaches the gate: it releases the hold in
the gate run that was up when it was reached, never in one started later, and never without a
matching hash; FAILED and UNAVAILABLE release nothing. The HOLD names `mcpward validate` only
where tier 3 can run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mcpward.contracts.clearance import VALIDATION
from mcpward.contracts.gate import Gate
from mcpward.contracts.holds import Commands, hold_details, hold_message
from mcpward.contracts.model import HoldRecord, ItemKind
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.store.pins_sqlite import SqlitePinStore
from tests.fixtures.validation_server import tool_for
from tests.validation.held import UPSTREAM, hold_measure

KEY = (ItemKind.TOOL, "measure")


def _gate(state_dir: Path) -> Gate:
    gate = Gate(SqlitePinStore(state_dir), lambda _: PostureTable(Posture.GUARD), Commands())
    gate.observe(UPSTREAM, {KEY: tool_for(2)}, [ItemKind.TOOL])
    return gate


def _check(gate: Gate) -> Any:
    return gate.check_connection(UPSTREAM, gate.view({KEY: tool_for(2)}, [ItemKind.TOOL]), *KEY)


def _write_verdict(state_dir: Path, verdict: str, **changes: Any) -> None:
    """What `mcpward validate` does to the hold, from its own connection to the store."""
    store = SqlitePinStore(state_dir)
    try:
        hold = store.holds(UPSTREAM)[0]
        entry = {"verdict": verdict, "held_hash": hold.new_hash, "at": time.time(), **changes}
        hold.extra = {**hold.extra, VALIDATION: entry}
        store.write(UPSTREAM, put_holds=[hold])
    finally:
        store.close()


def test_cleared_releases_the_running_gate_and_not_a_later_one(tmp_path: Path) -> None:
    hold_measure(tmp_path)
    running = _gate(tmp_path)
    assert isinstance(_check(running), HoldRecord)
    _write_verdict(tmp_path, "CLEARED")
    assert _check(running) is None  # picked up from the store on the next call
    assert "measure" not in running.withheld(UPSTREAM, ItemKind.TOOL)
    assert running.pin(UPSTREAM, *KEY).contract == tool_for(1)  # nothing re-pinned
    restarted = _gate(tmp_path)
    assert isinstance(_check(restarted), HoldRecord)  # a new run holds again
    assert "measure" in restarted.withheld(UPSTREAM, ItemKind.TOOL)


def test_failed_a_stale_hash_or_an_earlier_verdict_release_nothing(tmp_path: Path) -> None:
    hold_measure(tmp_path)
    running = _gate(tmp_path)
    _write_verdict(tmp_path, "FAILED")
    assert isinstance(_check(running), HoldRecord)
    _write_verdict(tmp_path, "CLEARED", held_hash="0" * 64)
    assert isinstance(_check(running), HoldRecord)
    _write_verdict(tmp_path, "CLEARED", at=running.started_at - 60)
    assert isinstance(_check(running), HoldRecord)


def test_the_hold_names_the_command_only_where_tier_3_can_run(tmp_path: Path) -> None:
    hold = hold_measure(tmp_path)
    config = ("--config", "/etc/mcpward.yaml")
    offered = Commands(("--state-dir", str(tmp_path)), frozenset({UPSTREAM}), config)
    expected = f"mcpward validate {UPSTREAM} measure --config /etc/mcpward.yaml"
    assert expected in hold_message(hold, offered)
    assert hold_details(hold, offered)["validate"] == expected
    for commands in (
        Commands(("--state-dir", str(tmp_path)), frozenset(), config),  # a remote, unowned
        Commands(("--state-dir", str(tmp_path)), frozenset({UPSTREAM})),  # no config to start it
    ):
        assert "validate" not in hold_message(hold, commands)
        assert "validate" not in hold_details(hold, commands)
    hold.extra["holding_kinds"] = ["output-schema-changed", "description-only"]
    assert "validate" not in hold_message(hold, offered)  # text drift is a person's to review
