"""benchmarks/footprint.py in its quick mode, server alone and mcpward only: the tables come out
with every row and the numbers it measured are positive (no timing thresholds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "footprint.py"

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux /proc")


def test_quick_mode_reports_every_row_with_positive_numbers(tmp_path: Path) -> None:
    raw = tmp_path / "footprint.json"
    argv = [sys.executable, str(SCRIPT), "--quick", "--targets", "server,mcpward"]
    done = subprocess.run(
        [*argv, "--desktop", "2", "--json", str(raw)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "load average (1 min) at start:" in out
    assert "load average (1 min) at end:" in out
    for row in ("| server alone |", "| mcpward run -- CMD (defaults) |"):
        assert out.count(row) == 2, out  # the main table and the desktop table
    assert "- mcpward run -- CMD (defaults): mcpward " in out
    assert "skipped" not in out

    numbers = json.loads(raw.read_text())["servers"]
    assert list(numbers) == ["echo"]
    runs, desktop = numbers["echo"]["runs"], numbers["echo"]["desktop"]
    assert sorted((r["round"], r["target"]) for r in runs) == [
        (0, "mcpward"),
        (0, "server"),
        (1, "mcpward"),
        (1, "server"),
    ]
    for run in runs:
        assert run["calls"] == 100
        assert run["spawn_ms"] > 0 and run["calls_s"] > 0
        for memory in (run["init"], run["after_calls"]):
            assert memory["rss"] > 0 and memory["hwm"] >= memory["rss"] and memory["pss"] > 0
        if run["target"] == "mcpward":  # its own process, never the upstream it wraps
            assert "echo_upstream.py" not in run["init"]["processes"]
            assert run["init"]["processes"][0] == "mcpward"
    assert len(desktop) == 4
    for entry in desktop:
        assert entry["copies"] == 2
        assert entry["all_answered_ms"] > 0 and entry["memory"]["rss"] > 0
