"""`mcpward validate` on fixture servers, one per outcome: a drifted tool that keeps its new
contract is CLEARED; output off its schema, a write while read-only, a connection while
closed-world and executed invalid input are FAILED with the evidence; a remote server the
operator does not own, a machine with no isolator and a hold behaviour cannot settle are
UNAVAILABLE. Each verdict is in the ledger; CLEARED and FAILED are on the hold, never a pin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpward.contracts.clearance import VALIDATION
from mcpward.contracts.model import ItemKind
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.validations import read_validations
from mcpward.store.ledger_sqlite import read_snapshot
from mcpward.store.pins_sqlite import SqlitePinStore
from tests.fixtures.validation_server import tool_for
from tests.validation.held import UPSTREAM, fixture_upstream, held_config, require_isolator
from tests.validation.run_cli import run_validate

require_isolator()


def _state(config: Path) -> tuple[dict[str, Any], Any]:
    """The hold's `extra` and its pin, as the store has them now."""
    store = SqlitePinStore(config.parent / "state")
    try:
        loaded = store.load(UPSTREAM)
        hold = loaded.holds[(ItemKind.TOOL, "measure")]
        return hold.extra, loaded.pins[(ItemKind.TOOL, "measure")]
    finally:
        store.close()


def _ledger(config: Path) -> list[dict[str, Any]]:
    with read_snapshot(EvidencePaths.resolve(config.parent / "state").ledger) as view:
        return read_validations(view.entries(start_seq=0))


def _findings(report: dict[str, Any]) -> set[str]:
    return {o["finding"] for o in report["observations"] if o["contradiction"]}


def test_a_drift_that_keeps_its_new_contract_is_cleared_for_the_running_gateway(
    tmp_path: Path,
) -> None:
    config = held_config(tmp_path, [fixture_upstream("honest")])
    code, report = run_validate(config)
    assert (code, report["verdict"], report["released"]) == (0, "CLEARED", True)
    origin = report["provenance"]
    assert origin["tier_reached"] == 3 and origin["verdict_scope"] == "behavioural"
    assert origin["leg"] == "sandbox" and origin["seed"] == 7
    assert origin["battery_size"] == origin["calls_made"] > 10
    assert origin["isolation"]["isolator"] == "bubblewrap + strace"
    assert origin["cannot_see"]  # the verdict says what a sandbox cannot show
    extra, pin = _state(config)
    assert extra[VALIDATION]["verdict"] == "CLEARED"
    assert pin.contract == tool_for(1)  # never a pin: re-pin stays a person's act
    assert [e["verdict"] for e in _ledger(config)] == ["CLEARED"]


@pytest.mark.parametrize(
    ("behave", "finding", "evidence"),
    [
        ("off_schema", "output_off_schema", "structuredContent/count: fails type"),
        ("writes", "write_by_read_only", "in the writable area: created measure-cache.txt"),
        ("connects", "connect_by_closed_world", "connect 127.0.0.1:"),
        ("lax", "invalid_input_executed", "answered as a success"),
    ],
)
def test_a_contradiction_fails_and_the_evidence_is_added_to_the_hold(
    tmp_path: Path, behave: str, finding: str, evidence: str
) -> None:
    config = held_config(tmp_path, [fixture_upstream(behave, "--port", "9")])
    code, report = run_validate(config)
    assert (code, report["verdict"], report["released"]) == (1, "FAILED", False)
    assert _findings(report) == {finding}
    assert any(evidence in o["detail"] for o in report["observations"])
    extra, _ = _state(config)
    assert extra[VALIDATION]["verdict"] == "FAILED"
    assert extra[VALIDATION]["observations"] == report["observations"]
    assert [e["verdict"] for e in _ledger(config)] == ["FAILED"]


def test_processes_left_running_are_reported_not_held_against_the_contract(
    tmp_path: Path,
) -> None:
    code, report = run_validate(held_config(tmp_path, [fixture_upstream("spawns")]))
    assert (code, report["verdict"]) == (0, "CLEARED")
    left = [o for o in report["observations"] if o["finding"] == "leftover_processes"]
    assert left and not left[0]["contradiction"]


def test_a_later_cleared_never_overrides_a_failed_verdict_on_the_same_contract(
    tmp_path: Path,
) -> None:
    config = held_config(tmp_path, [fixture_upstream("off_schema")])
    assert run_validate(config)[1]["verdict"] == "FAILED"
    config.write_text(config.read_text().replace("off_schema", "honest"))
    code, report = run_validate(config)
    assert (code, report["verdict"], report["released"]) == (1, "CLEARED", False)
    assert "earlier FAILED" in report["effect"]
    assert _state(config)[0][VALIDATION]["verdict"] == "FAILED"


def test_a_remote_server_the_operator_does_not_own_is_declined(tmp_path: Path) -> None:
    remote = {"id": UPSTREAM, "url": "https://mcp.example.invalid/mcp"}
    config = held_config(tmp_path, [remote])
    code, report = run_validate(config)
    assert (code, report["verdict"], report["reason"]) == (1, "UNAVAILABLE", "remote_unowned")
    assert report["provenance"]["calls_made"] == 0
    assert VALIDATION not in _state(config)[0]  # UNAVAILABLE leaves the hold as it was
    assert [e["reason"] for e in _ledger(config)] == ["remote_unowned"]


def test_no_isolator_means_unavailable_never_an_unisolated_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    upstream = fixture_upstream("probe", "--outside", str(marker))
    config = held_config(tmp_path, [upstream])
    code, report = run_validate(config, env={"PATH": str(tmp_path / "empty-path")})
    assert (code, report["verdict"], report["reason"]) == (1, "UNAVAILABLE", "no_isolator")
    assert "bubblewrap" in report["detail"]
    assert report["provenance"]["calls_made"] == 0 and not marker.exists()
    assert VALIDATION not in _state(config)[0]


def test_a_server_that_hangs_or_cannot_start_is_unavailable(tmp_path: Path) -> None:
    hangs = held_config(tmp_path / "hangs", [fixture_upstream("hangs")])
    code, report = run_validate(hangs, extra=("--call-timeout", "1"))
    assert (code, report["verdict"], report["reason"]) == (1, "UNAVAILABLE", "timeout")
    missing = {"id": UPSTREAM, "command": str(tmp_path / "no-such-server")}
    code, report = run_validate(held_config(tmp_path / "missing", [missing]))
    assert (code, report["verdict"], report["reason"]) == (1, "UNAVAILABLE", "spawn_failed")


def test_a_hold_behaviour_cannot_settle_is_left_to_a_person(tmp_path: Path) -> None:
    config = held_config(tmp_path, [fixture_upstream("honest")])
    store = SqlitePinStore(tmp_path / "state")
    try:
        hold = store.holds(UPSTREAM)[0]
        hold.extra["holding_kinds"] = ["output-schema-changed", "removed-param"]
        store.write(UPSTREAM, put_holds=[hold])
    finally:
        store.close()
    code, report = run_validate(config)
    assert (code, report["verdict"], report["reason"]) == (1, "UNAVAILABLE", "not_behavioural")


def test_the_same_seed_runs_the_same_battery(tmp_path: Path) -> None:
    first = run_validate(held_config(tmp_path / "a", [fixture_upstream("off_schema")]))[1]
    second = run_validate(held_config(tmp_path / "b", [fixture_upstream("off_schema")]))[1]
    assert first["observations"] == second["observations"]
    assert first["provenance"]["battery_size"] == second["provenance"]["battery_size"]
