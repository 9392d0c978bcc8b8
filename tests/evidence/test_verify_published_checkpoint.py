"""`mcpward ledger verify` on the gateway's own database also checks the state directory's
checkpoint.latest: a tail cut that also removed the checkpoints stored in the ledger is
`truncated`, not `ok`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mcpward.cli.main import app

from .tamper import attacker, make_ledger


def verify(*args: str) -> tuple[int, dict[str, object], str]:
    runner = CliRunner()
    code = runner.invoke(app, ["ledger", "verify", *args]).exit_code
    out = runner.invoke(app, ["ledger", "verify", "--json", *args]).stdout
    text = runner.invoke(app, ["ledger", "verify", *args]).stdout
    return code, json.loads(out), text


def cut_tail_and_stored_checkpoints(state: Path, keep: int) -> None:
    with attacker(state / "evidence" / "ledger.sqlite") as conn:
        conn.execute("DELETE FROM ledger_entries WHERE seq >= ?", (keep,))
        conn.execute("DELETE FROM ledger_checkpoints WHERE size > ?", (keep,))


def test_a_cut_with_its_stored_checkpoints_is_caught_by_checkpoint_latest(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_ledger(state)  # 20 entries, checkpoints stored at 10 and 20, checkpoint.latest at 20
    assert verify("--state-dir", str(state))[0] == 0
    cut_tail_and_stored_checkpoints(state, keep=10)  # lands on a stored checkpoint: looks whole
    code, report, text = verify("--state-dir", str(state))
    assert (code, report["state"], report["reason"]) == (
        1,
        "truncated",
        "fewer_entries_than_checkpoint",
    )
    assert (report["entries"], report["checkpoint_size"]) == (10, 20)
    assert "checkpoint.latest" in str(report["message"]) and "commits to 20 entries" in text


def test_another_ledger_file_is_not_judged_by_this_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_ledger(state)
    other = make_ledger(tmp_path / "other", sizes=(10,))
    args = ["--state-dir", str(state), "--ledger", str(other.ledger)]
    code, report, _ = verify(*args, "--public-key", str(other.public_key), "--no-hmac")
    assert (code, report["state"], report["entries"]) == (0, "ok", 10), report
