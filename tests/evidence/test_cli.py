"""The ledger CLI: verify (key holder and outsider), export, receipt files, stats, tail, schemas."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import orjson
import pytest
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.evidence.schemas import checkpoint_schema, receipt_schema
from mcpward.store.ledger_sqlite import read_snapshot

from .tamper import attacker, edit_body, make_ledger, rows

runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


@pytest.fixture
def state(tmp_path: Path) -> Path:
    make_ledger(tmp_path / "state")
    return tmp_path / "state"


def verify_json(*args: str) -> tuple[int, dict[str, object]]:
    code, out = cli("ledger", "verify", "--json", *args)
    return code, json.loads(out)


def test_verify_ok_tampered_unsigned_and_missing(state: Path, tmp_path: Path) -> None:
    code, report = verify_json("--state-dir", str(state))
    assert (code, report["state"], report["entries"]) == (0, "ok", 20)
    code, out = cli("ledger", "verify", "--state-dir", str(state))
    assert code == 0 and out.startswith("ok:")

    with attacker(state / "evidence" / "ledger.sqlite") as conn:
        body = rows(conn)[12][1]
        conn.execute(
            "UPDATE ledger_entries SET body = ? WHERE seq = 12", (edit_body(body, name="x"),)
        )
    code, report = verify_json("--state-dir", str(state))
    assert (code, report["state"], report["first_bad_seq"]) == (1, "tampered", 12)
    code, out = cli("ledger", "verify", "--state-dir", str(state))
    assert "first bad sequence number: 12" in out

    fresh = tmp_path / "fresh"
    make_ledger(fresh, sizes=())
    code, report = verify_json("--state-dir", str(fresh))
    assert (code, report["state"]) == (2, "empty")

    code, _ = cli("ledger", "verify", "--state-dir", str(tmp_path / "nothing-here"))
    assert code == 3


def test_outsider_verifies_an_export_with_only_the_public_key(state: Path, tmp_path: Path) -> None:
    export = tmp_path / "ledger.jsonl"
    code, _ = cli(
        "ledger", "export", "--format", "jsonl", "-o", str(export), "--state-dir", str(state)
    )
    assert code == 0 and len(export.read_text().splitlines()) == 20
    code, pub = cli("ledger", "public-key", "--state-dir", str(state))
    assert code == 0
    outsider = tmp_path / "outsider"
    outsider.mkdir()
    (outsider / "mcpward.pub").write_text(pub)
    shutil.copy(state / "evidence" / "checkpoint.latest", outsider / "checkpoint")
    shutil.copy(export, outsider / "ledger.jsonl")
    args = [
        "--ledger", str(outsider / "ledger.jsonl"),
        "--public-key", str(outsider / "mcpward.pub"),
        "--checkpoint", str(outsider / "checkpoint"),
        "--state-dir", str(tmp_path / "outsider-state"),
    ]  # fmt: skip
    code, report = verify_json(*args)
    assert (code, report["state"], report["hmac_checked"], report["verified_through"]) == (
        0, "ok", False, 20,
    )  # fmt: skip

    lines = (outsider / "ledger.jsonl").read_text().splitlines()
    entry = orjson.loads(lines[4])
    entry["receipt"]["decision"] = "allow" if entry["receipt"]["decision"] != "allow" else "deny"
    lines[4] = orjson.dumps(entry).decode()
    (outsider / "ledger.jsonl").write_text("\n".join(lines) + "\n")
    code, report = verify_json(*args)
    assert (code, report["state"], report["first_bad_seq"]) == (1, "tampered", 4)

    # Without the checkpoint the outsider can check the links but proves nothing: unsigned.
    shutil.copy(export, outsider / "ledger.jsonl")
    code, report = verify_json(*args[:4], "--state-dir", str(tmp_path / "outsider-state"))
    assert (code, report["state"]) == (2, "unsigned")


def test_partial_export_since_verifies_against_the_checkpoint(state: Path, tmp_path: Path) -> None:
    with read_snapshot(state / "evidence" / "ledger.sqlite") as view:
        tenth = next(iter(view.entries(start_seq=10, limit=1)))
    since = datetime.fromtimestamp(tenth.recorded_at - 0.5, UTC).isoformat()  # between 9 and 10
    export = tmp_path / "recent.jsonl"
    code, _ = cli(
        "ledger", "export", "--since", since, "-o", str(export), "--state-dir", str(state)
    )
    assert code == 0
    assert [orjson.loads(x)["seq"] for x in export.read_text().splitlines()] == list(range(10, 20))
    code, report = verify_json("--ledger", str(export), "--state-dir", str(state))
    assert (code, report["state"], report["entries"], report["verified_through"]) == (
        0,
        "ok",
        10,
        20,
    )
    code, _ = cli("ledger", "export", "--since", "yesterday-ish", "--state-dir", str(state))
    assert code == 3


def test_receipt_files_integrity(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "receipts"
    code, _ = cli(
        "ledger", "export", "--format", "receipts", "-o", str(out), "--state-dir", str(state)
    )
    assert code == 0
    files = sorted(out.glob("*.json"))
    assert len(files) == 20
    validator = jsonschema.Draft202012Validator(receipt_schema())
    for path in files:
        validator.validate(json.loads(path.read_text()))

    def integrity() -> tuple[int, str]:
        code, report = verify_json("--receipts", str(out), "--state-dir", str(state))
        files_report = report["receipt_integrity"]
        assert isinstance(files_report, dict)
        return code, str(files_report["state"])

    assert integrity() == (0, "ok")
    extra = out / ("f" * 28 + ".json")
    extra.write_text(files[0].read_text())
    assert integrity() == (1, "not_linked")
    extra.unlink()
    original = files[1].read_bytes()
    files[1].unlink()
    assert integrity() == (1, "missing")
    files[1].write_bytes(original)
    data = json.loads(files[2].read_text())
    files[2].write_text(json.dumps({**data, "upstream": "elsewhere"}))
    assert integrity() == (1, "tampered")
    # Re-indenting is not tampering: integrity is over the canonical JSON of the file.
    files[2].write_text(json.dumps(data, indent=4))
    assert integrity() == (0, "ok")


def test_stats_tail_checkpoint_rotate_and_schema(state: Path, tmp_path: Path) -> None:
    code, out = cli("stats", "--json", "--state-dir", str(state))
    stats = json.loads(out)
    assert code == 0 and stats["decisions"] == 20
    assert stats["denials_by_guard"] == {"tool_filter": 4}
    assert stats["redactions_by_pattern"] == {"github_pat": 4, "openai_key": 8}
    assert stats["latency"]["gateway_ms"]["p50"] == 0.25
    code, out = cli("stats", "--state-dir", str(state))
    assert code == 0 and "denials by guard: tool_filter 4" in out

    code, out = cli("ledger", "export", "--state-dir", str(state))
    assert code == 0 and len(out.splitlines()) == 20

    code, out = cli("ledger", "tail", "--no-follow", "-n", "3", "--json", "--state-dir", str(state))
    assert code == 0 and [json.loads(x)["seq"] for x in out.splitlines()] == [17, 18, 19]

    note_file = tmp_path / "cp.note"
    code, out = cli(
        "ledger", "checkpoint", "--json", "-o", str(note_file), "--state-dir", str(state)
    )
    document = json.loads(out)
    jsonschema.Draft202012Validator(checkpoint_schema()).validate(document)
    assert document["size"] == 20 and note_file.read_text() == document["note"]

    code, out = cli("ledger", "rotate-key", "--state-dir", str(state))
    assert code == 0 and "(entry 20)" in out
    code, report = verify_json("--state-dir", str(state), "--checkpoint", str(note_file))
    assert (code, report["state"], report["entries"], report["checkpoint_size"]) == (
        0,
        "ok",
        21,
        21,
    )

    for name in ("receipt", "checkpoint", "config"):
        code, out = cli("schema", name)
        assert code == 0
        jsonschema.Draft202012Validator.check_schema(json.loads(out))


@pytest.mark.parametrize("levels", [("crash_safe",), ("sync",), ("batched", "crash_safe", "sync")])
def test_verify_and_stats_name_the_durability_level(
    tmp_path: Path, levels: tuple[str, ...]
) -> None:
    import asyncio

    from mcpward.evidence.recorder import build_recorder
    from mcpward.evidence.settings import EvidenceSettings

    from .records import decision

    async def write(level: str) -> None:
        rec = build_recorder(EvidenceSettings(durability=level), tmp_path)  # type: ignore[arg-type]
        for i in range(2):
            await rec.record(decision(i))
        await rec.close()

    for level in levels:
        asyncio.run(write(level))
    spans = ", ".join(f"{level} from seq {2 * n}" for n, level in enumerate(levels))
    code, out = cli("ledger", "verify", "--state-dir", str(tmp_path))
    assert code == 0 and f"durability: {spans}" in out
    code, out = cli("ledger", "verify", "--json", "--state-dir", str(tmp_path))
    assert json.loads(out)["durability"] == [
        {"since_seq": 2 * n, "level": level} for n, level in enumerate(levels)
    ]
    code, out = cli("stats", "--json", "--state-dir", str(tmp_path))
    assert code == 0 and json.loads(out)["durability"] == [
        {"since_seq": 2 * n, "level": level} for n, level in enumerate(levels)
    ]
    code, out = cli("stats", "--state-dir", str(tmp_path))
    assert f"receipts written with durability: {spans}" in " ".join(out.split())


def test_a_ledger_from_before_levels_were_recorded_says_so(state: Path) -> None:
    """Ledgers written before the level was recorded (no such table) still verify and count;
    the level is unknown."""
    with attacker(state / "evidence" / "ledger.sqlite") as conn:
        conn.execute("DROP TABLE ledger_durability")
    code, out = cli("ledger", "verify", "--state-dir", str(state))
    assert code == 0 and "durability: not recorded" in out
    code, out = cli("stats", "--json", "--state-dir", str(state))
    assert code == 0 and json.loads(out)["durability"] == []


def test_an_old_ledger_continued_by_a_new_gateway_says_where_the_record_begins(
    state: Path,
) -> None:
    import asyncio

    from mcpward.evidence.recorder import build_recorder
    from mcpward.evidence.settings import EvidenceSettings

    from .records import decision

    with attacker(state / "evidence" / "ledger.sqlite") as conn:
        conn.execute("DROP TABLE ledger_durability")
        size = len(rows(conn))

    async def write() -> None:
        rec = build_recorder(EvidenceSettings(), state)
        await rec.record(decision(0))
        await rec.close()

    asyncio.run(write())
    code, out = cli("ledger", "verify", "--state-dir", str(state))
    assert code == 0, out
    assert f"durability: not recorded before seq {size}, crash_safe from seq {size}" in out
