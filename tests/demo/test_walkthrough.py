"""`mcpward demo` end to end: a real gateway process, the demo server, the SDK client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from mcpward.demo import walkthrough
from mcpward.pipeline.spec import GuardSpec


def run_demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        # TMPDIR: the demo's work directory (kept when a step fails) lands in this test's tmp.
        env={
            "COLUMNS": "200",
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TMPDIR": str(tmp_path),
        },
    )


def test_demo_shows_each_step_and_exits_zero(tmp_path: Path) -> None:
    done = run_demo(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # auto mode: the demo server is dual-era, so the gateway passes the 2026-07-28 probe through.
    assert "connected: protocol 2026-07-28" in out
    for title in ("What the client may see", "harmless call passes", "destructive call is denied"):
        assert title in out
    assert "read_config" in out and "delete_file" in out
    assert "-32013" in out and "tool_not_allowed" in out
    assert "add(a=2, b=3) -> 5" in out
    assert "Demo complete." in out
    assert "demo files kept" not in out
    assert "mcpward demo --keep" in out and "mcpward console --config" in out


async def test_demo_fails_when_the_gateway_does_not_deny(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The demo checks what it narrates: without the tool_filter rule it must report failure."""

    def no_guards() -> list[GuardSpec]:
        return []

    monkeypatch.setattr(walkthrough, "demo_guards", no_guards)
    output = tmp_path / "out.txt"
    with output.open("w") as sink:
        status = await walkthrough.run_walkthrough(
            Console(file=sink, width=200), mode="legacy", workdir=tmp_path / "demo"
        )
    text = output.read_text()
    assert status == 1
    assert "connected: protocol 2025-11-25" in text
    assert "harmless call passes" in text and "step failed" in text
    assert "delete_file is listed although" in text
    assert "delete_file was not denied" in text
    assert "demo files kept in" in text


def kept_workdir(tmp_path: Path) -> Path:
    """The work directory a kept demo run left (TMPDIR is the test's tmp_path)."""
    (workdir,) = tmp_path.glob("mcpward-demo-*")
    return workdir


def test_demo_keep_leaves_one_open_hold_for_the_console(tmp_path: Path) -> None:
    """`demo --keep` accepts its first hold but leaves a second one open (issue #25): `holds`
    and the console on the kept state show it, with the diff of the rewritten description."""
    from starlette.testclient import TestClient

    from mcpward.console.app import ConsoleSettings, create_console_app
    from mcpward.console.auth import AdminAuth
    from mcpward.evidence.settings import EvidencePaths
    from tests.console.conftest import login
    from tests.console.state import ADMIN_TOKEN

    done = run_demo(tmp_path, "--keep")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "left open for you to review" in out and "Not accepted" in out
    assert "Demo complete." in out and "mcpward holds --config" in out
    state = kept_workdir(tmp_path) / "state"
    shown = subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", "holds", "--json", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (hold,) = json.loads(shown.stdout)  # the echo hold was accepted; this one is open
    assert (hold["upstream"], hold["name"]) == ("demo", "read_config")
    assert hold["change_kinds"] == ["description-only", "injection-marker-added"]
    assert "~/.aws/credentials" in hold["new_contract"]["description"]
    settings = ConsoleSettings(state, EvidencePaths.resolve(state), AdminAuth(ADMIN_TOKEN))
    with TestClient(create_console_app(settings), follow_redirects=False) as client:
        login(client)
        page = client.get("/holds").text
    assert page.count('<section class="hold') == 1
    assert 'data-item="read_config" data-risk="high"' in page
    assert "aws/credentials" in page


def test_demo_keep_in_must_be_new_or_empty(tmp_path: Path) -> None:
    """A demo starts from nothing: a directory holding an earlier run's pins is refused."""
    from typer.testing import CliRunner

    from mcpward.cli.main import build_app

    (tmp_path / "mcpward.yaml").write_text("version: 1\n", encoding="utf-8")
    done = CliRunner().invoke(build_app(["demo"]), ["demo", "--keep-in", str(tmp_path)])
    assert done.exit_code == 2 and "is not empty" in done.output
