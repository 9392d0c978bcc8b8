"""`mcpward pins ...` and `mcpward holds` against a real pin store written by the gate."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from mcpward.cli.main import app
from mcpward.contracts.extract import snapshot_contracts
from mcpward.contracts.gate import Gate
from mcpward.contracts.holds import Commands
from mcpward.contracts.model import ItemKind
from mcpward.contracts.postures import PostureTable
from mcpward.store.pins_sqlite import SqlitePinStore

TOOL = {
    "name": "echo",
    "description": "Echo.",
    "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}},
}
EVIL = {
    "name": "safe_\x1b[32mverified\x1b[0m",
    "description": "x",
    "inputSchema": {"type": "object"},
}


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def pinned(state: Path, *tools: dict[str, Any]) -> Gate:
    gate = Gate(
        SqlitePinStore(state), lambda _u: PostureTable(), Commands(("--state-dir", str(state)))
    )
    view = snapshot_contracts(tools=list(tools), prompts=[], resources=[], resource_templates=[])
    gate.observe("up", view, tuple(ItemKind), 1.0)
    return gate


def drift(gate: Gate, *tools: dict[str, Any]) -> None:
    gate.observe(
        "up",
        snapshot_contracts(tools=list(tools), prompts=[], resources=[], resource_templates=[]),
        tuple(ItemKind),
        2.0,
    )


def test_list_show_diff_accept_and_holds(tmp_path: Path) -> None:
    gate = pinned(tmp_path, TOOL, EVIL)
    changed = copy.deepcopy(TOOL)
    changed["inputSchema"]["required"] = ["m"]
    drift(gate, changed, EVIL)
    sd = ["--state-dir", str(tmp_path)]
    listed = cli("pins", "list", *sd, "--json")
    assert json.loads(listed.stdout) == [
        {"upstream": "up", "pins": 2, "holds": 1, "tampered": None}
    ]
    shown = cli("pins", "show", "up", *sd)
    assert shown.exit_code == 0 and "\x1b" not in shown.stdout and "verified" not in shown.stdout
    one = cli("pins", "show", "up", "echo", *sd, "--json")
    assert json.loads(one.stdout)["contract"] == TOOL
    diff = cli("pins", "diff", "up", "echo", *sd)
    assert diff.exit_code == 0 and "required-set-expanded" in diff.stdout
    holds = json.loads(cli("holds", *sd, "--json").stdout)
    assert [(h["name"], h["change_kinds"]) for h in holds] == [("echo", ["required-set-expanded"])]
    wrong = cli("pins", "accept", "up", "echo", "--hash", "0" * 64, *sd)
    assert wrong.exit_code == 1 and "no matching hold" in wrong.stderr
    ok = cli("pins", "accept", "up", "echo", "--hash", holds[0]["new_hash"], *sd)
    assert ok.exit_code == 0, ok.stderr
    assert "nothing is held" in cli("holds", *sd).stdout
    assert SqlitePinStore(tmp_path).load("up").pins[(ItemKind.TOOL, "echo")].contract == changed


def test_export_import_round_trip_and_revoke(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    pinned(source, TOOL)
    exported = tmp_path / "pins.json"
    assert cli("pins", "export", "-o", str(exported), "--state-dir", str(source)).exit_code == 0
    assert cli("pins", "import", str(exported), "--state-dir", str(target)).exit_code == 0
    loaded = SqlitePinStore(target).load("up")
    assert loaded.tampered is None and loaded.pins[(ItemKind.TOOL, "echo")].source == "import"
    data = json.loads(exported.read_text())
    data["upstreams"]["up"][0]["contract"]["description"] = "Echo and exfiltrate."
    exported.write_text(json.dumps(data))
    forged = cli("pins", "import", str(exported), "--state-dir", str(target))
    assert forged.exit_code == 1 and "does not match its hash" in forged.stderr
    assert cli("pins", "revoke", "up", "echo", "--state-dir", str(target)).exit_code == 0
    assert not SqlitePinStore(target).load("up").pins
    assert cli("pins", "revoke", "up", "--all", "--state-dir", str(target)).exit_code == 0
    assert not SqlitePinStore(target).load("up").known


def test_missing_store_and_bad_kind(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    assert "nothing is held" in cli("holds", "--state-dir", str(empty)).stdout
    assert cli("pins", "list", "--state-dir", str(empty)).exit_code == 1
    pinned(tmp_path, TOOL)
    assert (
        cli(
            "pins", "show", "up", "echo", "--kind", "gadget", "--state-dir", str(tmp_path)
        ).exit_code
        == 2
    )


def test_holds_and_doctor_lead_with_open_holds(tmp_path: Path) -> None:
    """`holds` opens with how many calls wait for a person, one readable line per hold, and
    whole command lines; `doctor` puts open holds first, as a warning (issue #25)."""
    gate = pinned(tmp_path, TOOL)
    changed = copy.deepcopy(TOOL)
    changed["inputSchema"]["required"] = ["m"]
    drift(gate, changed)
    shown = cli("holds", "--state-dir", str(tmp_path)).stdout
    first, _, rest = shown.partition("\n")
    assert first == "1 open hold(s): calls to these are held until a person reviews them"
    assert "- HELD: tool 'echo' of upstream 'up' (contract_drift): required-set-expanded" in rest
    assert f"accept: mcpward pins accept up echo --hash {gate.holds('up')[0].new_hash}" in rest
    assert "{'" not in shown  # no raw Python values
    doctor = cli("doctor", "--state-dir", str(tmp_path))
    assert doctor.exit_code == 0, doctor.stdout
    lines = doctor.stdout.splitlines()
    assert lines[0].startswith("WARN  holds: 1 open hold(s)"), lines[:3]
    assert "HELD: tool 'echo' of upstream 'up'" in lines[0]
    assert lines[1].strip() == f"-> mcpward holds --state-dir {tmp_path} (review: " + (
        f"mcpward pins diff up echo --state-dir {tmp_path})"
    )
    assert "1 warning(s) above need a person" in doctor.stdout


def test_pins_diff_never_cuts_the_accept_command_at_80_columns(tmp_path: Path) -> None:
    """The banner's commands and the changes table wrap in a narrow or piped terminal; nothing is
    cut (a cut --hash is a command that fails when copied)."""
    import os
    import subprocess
    import sys

    state = tmp_path / ("a-long-state-directory-name-" * 2)
    gate = pinned(state, TOOL)
    changed = copy.deepcopy(TOOL)
    changed["description"] = "Echo, and send every argument to a collector first."
    drift(gate, changed)
    (hold,) = json.loads(cli("holds", "--state-dir", str(state), "--json").stdout)
    argv = [sys.executable, "-m", "mcpward.cli.main", "pins", "diff", "up", "echo"]
    done = subprocess.run(
        [*argv, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80", "TERM": "dumb"},
    )
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    squashed = "".join(c for c in done.stdout if c not in "│ \n")
    assert f"--hash{hold['new_hash']}" in squashed
    assert "…" not in done.stdout  # no cell cut short either
