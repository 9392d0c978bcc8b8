"""A state directory where the fixture's `measure` tool is held for a behavioural drift (its
output schema moved from version 1 to 2), made by the real gate, and a gateway config naming it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpward.contracts.gate import Gate
from mcpward.contracts.holds import Commands
from mcpward.contracts.model import HoldRecord, ItemKind
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.store.pins_sqlite import SqlitePinStore
from tests.fixtures.validation_server import tool_for
from tests.support.gateway import write_gateway_config

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "validation_server.py"
UPSTREAM = "meter"


def fixture_upstream(behave: str, *extra: str, upstream: str = UPSTREAM) -> dict[str, Any]:
    args = [str(FIXTURE), "--behave", behave, *extra]
    return {"id": upstream, "command": sys.executable, "args": args}


def hold_measure(state_dir: Path, upstream: str = UPSTREAM, *, writer: bool = False) -> HoldRecord:
    """Pin version 1 of `measure`, then observe version 2: the gate holds it."""
    store = SqlitePinStore(state_dir)
    try:
        gate = Gate(store, lambda _: PostureTable(Posture.GUARD), Commands())
        gate.observe(
            upstream, {(ItemKind.TOOL, "measure"): tool_for(1, writer=writer)}, [ItemKind.TOOL]
        )
        observed = gate.observe(
            upstream, {(ItemKind.TOOL, "measure"): tool_for(2, writer=writer)}, [ItemKind.TOOL]
        )
        assert len(observed.new_holds) == 1, observed
        return observed.new_holds[0]
    finally:
        store.close()


def held_config(directory: Path, upstreams: list[dict[str, Any]], *, writer: bool = False) -> Path:
    """A gateway config over `upstreams`, with `measure` of the first one already held."""
    config = write_gateway_config(directory, upstreams, guards=[])
    (directory / "state").mkdir(exist_ok=True)
    hold_measure(directory / "state", str(upstreams[0]["id"]), writer=writer)
    return config


def require_isolator() -> None:
    """Skip a module without bubblewrap and strace; under CI (which installs them), fail."""
    if shutil.which("bwrap") and shutil.which("strace"):
        return
    reason = "bubblewrap and strace are needed (apt-get install bubblewrap strace; .ci/run does)"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)
