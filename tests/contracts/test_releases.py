"""`mcpward diff` on saved tools/list results of real published releases (tests/data/releases,
made with `mcpward snapshot`): SDK and tooling churn passes, real breaking changes hold."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mcpward.cli.main import app
from mcpward.contracts.model import Verdict
from mcpward.contracts.postures import GUARD_TABLE, Posture, PostureTable
from mcpward.contracts.snapshot_file import (
    Snapshot,
    SnapshotDiff,
    diff_snapshots,
    parse_snapshot,
    read_snapshot,
)
from mcpward.contracts.taxonomy import ChangeKind as K
from mcpward.contracts.taxonomy import Family, family

RELEASES = Path(__file__).resolve().parents[1] / "data" / "releases"
PAIRS = {
    "time": ("mcp-server-time@2025.7.1", "mcp-server-time@2026.10.19"),
    "fetch": ("mcp-server-fetch@2025.4.7", "mcp-server-fetch@2026.10.24"),
    "git": ("mcp-server-git@2025.1.14", "mcp-server-git@2026.10.19"),
    "filesystem": ("server-filesystem@2025.3.28", "server-filesystem@2026.8.31"),
    "everything": ("server-everything@2025.7.1", "server-everything@2026.8.31"),
}
CHURN_FAMILIES = {Family.COSMETIC, Family.ADDITIVE}


def load(name: str) -> Snapshot:
    return read_snapshot(RELEASES / f"{name}.json")


def guard_diff(pair: str) -> SnapshotDiff:
    old, new = PAIRS[pair]
    return diff_snapshots(load(old), load(new), PostureTable(Posture.GUARD))


def verdicts(diff: SnapshotDiff) -> dict[str, tuple[str, set[str]]]:
    return {
        f"{i.kind.value}:{i.name}": (i.decision.judged.value, set(i.decision.holding))
        for i in diff.items
    }


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_churn_alone_never_holds(pair: str) -> None:
    """Every held item holds for a breaking, behavioural, text or marker kind, never churn."""
    for item in guard_diff(pair).items:
        kinds = {c.kind for c in item.changes}
        if all(family(k) in CHURN_FAMILIES for k in kinds) and K.TOOL_ADDED not in kinds:
            assert item.decision.judged is Verdict.PROCEED, (item.name, kinds)
        for held in item.decision.holding:
            assert GUARD_TABLE[K(held)][0] is not Verdict.PROCEED


def test_fetch_release_is_pure_tooling_churn() -> None:
    diff = guard_diff("fetch")
    assert diff.verdict is Verdict.PROCEED
    kinds = {c.kind for i in diff.items for c in i.changes}
    # the SDK rewrote `exclusiveMaximum: 1000000` as `maximum: 999999` on an integer: same bound
    assert K.CONSTRAINT_NARROWED not in kinds
    assert K.ANNOTATION_HINT_CHANGED in kinds and K.SCHEMA_ANNOTATION_CHANGED in kinds


def test_time_release_holds_only_its_description_edit() -> None:
    result = verdicts(guard_diff("time"))
    assert result["tool:convert_time"] == ("PROCEED", set())  # titles, output schema, hints
    assert result["tool:get_current_time"] == ("HOLD", {"description-only"})  # "timezones" typo fix


def test_git_release_holds_the_narrowed_and_rewritten_tools_only() -> None:
    result = verdicts(guard_diff("git"))
    assert result["tool:git_add"] == ("HOLD", {"constraint-narrowed"})  # files: minItems 1 added
    assert result["tool:git_show"] == ("HOLD", {"description-only"})
    assert result["tool:git_log"] == ("PROCEED", set())  # two optional timestamps
    assert result["tool:git_branch"] == ("PROCEED", set())  # a new tool, trusted on first use
    assert sum(1 for v, _ in result.values() if v == "HOLD") == 2


def test_filesystem_release_passes_sdk_churn_and_holds_text_rewrites() -> None:
    result = verdicts(guard_diff("filesystem"))
    held = {name for name, (v, _) in result.items() if v != "PROCEED"}
    assert held == {
        "tool:list_allowed_directories",
        "tool:read_file",
        "tool:read_multiple_files",
        "tool:search_files",
    }
    assert result["tool:write_file"] == (
        "PROCEED",
        set(),
    )  # titles, hints, output schema, execution
    assert result["tool:read_multiple_files"][1] == {
        "param-description-changed",
        "constraint-narrowed",
    }


def test_everything_release_renames_are_caught_as_removed_tools() -> None:
    result = verdicts(guard_diff("everything"))
    for renamed in ("printEnv", "getTinyImage", "longRunningOperation", "sampleLLM", "add"):
        assert result[f"tool:{renamed}"] == ("HOLD", {"tool-removed"})
    assert result["tool:get-env"] == ("PROCEED", set())
    assert result["server:instructions"][0] == "HOLD"


def test_a_real_breaking_edit_on_a_real_release_is_never_missed() -> None:
    base = load("mcp-server-fetch@2026.10.24")
    (fetch,) = base.lists["tools"]

    def variant(edit: object) -> Snapshot:
        tool = copy.deepcopy(fetch)
        edit(tool)  # type: ignore[operator]
        return parse_snapshot({"tools": [tool]}, "edited")

    edits = {
        "destructive flip": lambda t: t["annotations"].update(
            readOnlyHint=False, destructiveHint=True
        ),
        "removed param": lambda t: t["inputSchema"]["properties"].pop("raw"),
        "new required param": lambda t: (
            t["inputSchema"]["properties"].update(token={"type": "string"}),
            t["inputSchema"]["required"].append("token"),
        ),
        "rewritten description": lambda t: t.update(
            description=t["description"] + " Include cookies."
        ),
        "narrowed bound": lambda t: t["inputSchema"]["properties"]["max_length"].update(maximum=10),
    }
    for label, edit in edits.items():
        diff = diff_snapshots(base, variant(edit), PostureTable(Posture.GUARD))
        assert diff.verdict.holds, label


def run_diff(*args: str) -> Result:
    return CliRunner().invoke(app, ["diff", *args])


def test_cli_exit_codes(tmp_path: Path) -> None:
    fetch_old, fetch_new = (str(RELEASES / f"{n}.json") for n in PAIRS["fetch"])
    git_old, git_new = (str(RELEASES / f"{n}.json") for n in PAIRS["git"])
    assert run_diff(fetch_old, fetch_new).exit_code == 0
    held = run_diff(git_old, git_new, "--json")
    assert held.exit_code == 1
    assert json.loads(held.stdout)["verdict"] == "HOLD"
    assert run_diff(git_old, git_new, "--posture", "monitor").exit_code == 0
    response = tmp_path / "response.json"
    response.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": json.loads(Path(fetch_new).read_text())})
    )
    assert run_diff(fetch_new, str(response)).exit_code == 0
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert run_diff(fetch_old, str(broken)).exit_code == 2
    assert run_diff(fetch_old, str(tmp_path / "missing.json")).exit_code == 2


def test_the_installed_entry_point_gates_an_upgrade() -> None:
    """As a CI job would run it: a real process, exit status 1 on drift the posture holds."""
    git_old, git_new = (str(RELEASES / f"{n}.json") for n in PAIRS["git"])
    done = subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", "diff", git_old, git_new],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "git_add" in done.stdout
