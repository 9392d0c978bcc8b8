"""`mcpward screen`: real server processes (the drifting fixture, a poisoned fixture, the npm
server-everything), started with no network where the machine allows it; verdicts, exit codes,
`--json`, the typosquat check and `--pin`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpward.cli.screen import network_isolation
from mcpward.store.pins_sqlite import SqlitePinStore
from tests.support import paths

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MCPWARD = [sys.executable, "-m", "mcpward.cli.main", "screen"]


@pytest.fixture(autouse=True)
def _own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Screens record their verdicts in the state dir: never the user's."""
    monkeypatch.setenv("MCPWARD_STATE_DIR", str(tmp_path / "default-state"))


def screen(*args: str) -> tuple[int, dict[str, object]]:
    done = subprocess.run(
        [*MCPWARD, "--json", *args], capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, json.loads(done.stdout)


def drift_command(tmp_path: Path, version: int = 0) -> list[str]:
    control = tmp_path / "control.json"
    control.write_text(json.dumps({"version": version, "annotations": "write"}))
    log = tmp_path / "calls.jsonl"
    return [sys.executable, str(FIXTURES / "drift_server.py"), "--control", str(control),
            "--log", str(log), "--mode", "startup"]  # fmt: skip


def test_a_clean_server_is_allowed(tmp_path: Path) -> None:
    code, report = screen("--id", "bank", "--", *drift_command(tmp_path))
    assert (code, report["verdict"]) == (0, "ALLOW"), report
    assert report["counts"] == {"tools": 1, "prompts": 1, "resources": 1, "resourceTemplates": 0}
    expected = "no network" if network_isolation() else "not isolated"
    assert str(report["network"]).startswith(expected)
    identity = report["provenance"]["server_identity"]  # type: ignore[index]
    assert identity["digest"] and identity["executable_sha256"]  # the python binary, hashed


def test_a_poisoned_server_is_denied(tmp_path: Path) -> None:
    command = [sys.executable, str(FIXTURES / "content_server.py"), "--variant", "main"]
    code, report = screen("--", *command)
    assert (code, report["verdict"]) == (2, "DENY"), report
    assert "tools:add" in report["would_drop"]


def test_an_id_one_edit_from_an_allowed_one_is_denied(tmp_path: Path) -> None:
    code, report = screen("--id", "banc", "--allowed", "bank", "--", *drift_command(tmp_path))
    assert (code, report["typosquat_of"]) == (2, "bank"), report


def test_a_server_that_cannot_start_is_unverified() -> None:
    code, report = screen("--timeout", "20", "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert (code, report["verdict"]) == (3, "UNVERIFIED"), report


def test_a_real_npm_server_is_screened() -> None:
    code, report = screen("--id", "everything", "--", *paths.server_everything_command())
    assert report["verdict"] != "UNVERIFIED", report
    assert code in (0, 1, 2) and report["counts"]["tools"] > 5  # type: ignore[index]


def test_pin_makes_the_screened_contract_the_baseline(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, report = screen("--id", "bank", "--pin", "--state-dir", str(state), "--",
                          *drift_command(tmp_path))  # fmt: skip
    assert code == 0 and report["pinned"] == 4, report  # tool, prompt, resource, instructions
    store = SqlitePinStore(state)
    try:
        pins = store.load("bank").pins
        assert {p.source for p in pins.values()} == {"screen"}
    finally:
        store.close()
    # pinned already: a second --pin is refused instead of overwriting the reviewed baseline
    again = subprocess.run(
        [*MCPWARD, "--id", "bank", "--pin", "--state-dir", str(state), "--",
         *drift_command(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert again.returncode == 4 and "pinned already" in again.stderr


@pytest.mark.parametrize("args", [[], ["--url", "http://127.0.0.1:9/mcp", "--", "x"]])
def test_a_command_or_a_url_is_required(args: list[str]) -> None:
    done = subprocess.run([*MCPWARD, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 4 and "not both" in done.stderr


async def test_a_screened_baseline_holds_the_first_drifted_call(tmp_path: Path) -> None:
    """The first real session starts from the reviewed baseline, not from trust on first use."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcpward import ContractHeld, guarded

    state = tmp_path / "state"
    code, _ = screen("--id", "bank", "--pin", "--state-dir", str(state), "--",
                     *drift_command(tmp_path))  # fmt: skip
    assert code == 0
    command = drift_command(tmp_path, version=1)  # the server changed before its first session
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        async with guarded(session, upstream_id="bank", config={"state_dir": str(state)}) as gs:
            with pytest.raises(ContractHeld) as held:
                await gs.call_tool("transfer", {"amount": 1})
    assert held.value.data["provenance"]["pin"]["how"] == "screen"


def verdicts(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mcpward.cli.main", "verdicts", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_signed_verdicts_round_trip_and_a_tampered_file_is_refused(tmp_path: Path) -> None:
    """Operator A screens a server as DENY (its id imitates an allowed one) and exports; operator
    B imports with A's key, and B's own screen of the very same contracts, clean on B's side, is
    raised to DENY. A file altered after signing, or checked against another key, is refused and
    nothing is imported."""
    a_state, b_state, other = tmp_path / "a", tmp_path / "b", tmp_path / "other"
    server = drift_command(tmp_path)
    code, _ = screen(
        "--id", "banc", "--allowed", "bank", "--state-dir", str(a_state), "--", *server
    )
    assert code == 2
    exported = tmp_path / "verdicts.note"
    assert verdicts("export", "-o", str(exported), "--state-dir", str(a_state)).returncode == 0
    a_key = a_state / "evidence" / "signing.pub"
    assert verdicts("export", "-o", str(tmp_path / "x"), "--state-dir", str(other)).returncode == 0
    other_key = other / "evidence" / "signing.pub"

    tampered = tmp_path / "tampered.note"
    tampered.write_text(exported.read_text().replace('"DENY"', '"ALLOW"'))
    for bad, key in ((tampered, a_key), (exported, other_key)):
        refused = verdicts("import", str(bad), "--trust", str(key), "--state-dir", str(b_state))
        assert refused.returncode == 4 and "refused" in refused.stderr
    assert not (b_state / "verdicts.jsonl").exists()

    done = verdicts("import", str(exported), "--trust", str(a_key), "--state-dir", str(b_state))
    assert done.returncode == 0 and "imported 1 verdict" in done.stdout, done.stderr
    code, report = screen("--id", "bank", "--state-dir", str(b_state), "--", *server)
    assert (code, report["verdict"]) == (2, "DENY"), report  # raised by the shared verdict
    assert any("shared verdict" in str(r) for r in report["reasons"])  # type: ignore[union-attr]
