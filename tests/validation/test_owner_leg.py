"""The owner-authorized leg: an HTTP upstream the config marks `owned: true` gets input probes
through the gateway's connector, never a valid call to a tool that is not read-only. It can fail a
tool that executes invalid input; it clears only what it can observe."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.fixtures.validation_server import INPUT
from tests.validation.held import FIXTURE, UPSTREAM, held_config
from tests.validation.run_cli import run_validate


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """Starts the fixture over HTTP; returns its owned upstream entry and its call log."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*flags: str) -> tuple[dict[str, Any], Path]:
        port, log = _free_port(), tmp_path / "calls.jsonl"
        argv = [sys.executable, str(FIXTURE), "--http-port", str(port), "--log", str(log), *flags]
        procs.append(subprocess.Popen(argv))
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                subprocess.run(["sleep", "0.05"], check=False)
        url = f"http://127.0.0.1:{port}/mcp"
        return {"id": UPSTREAM, "url": url, "allow_private": ["127.0.0.1"], "owned": True}, log

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


def _calls(log: Path) -> list[Any]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_read_only_tool_keeping_its_output_schema_is_cleared(tmp_path: Path, serve: Any) -> None:
    upstream, log = serve("--behave", "honest")
    code, report = run_validate(held_config(tmp_path, [upstream]))
    assert (code, report["verdict"]) == (0, "CLEARED")
    assert report["provenance"]["leg"] == "owner_authorized"
    assert any(Draft202012Validator(INPUT).is_valid(a) for a in _calls(log))


def test_a_tool_that_writes_gets_invalid_inputs_only(tmp_path: Path, serve: Any) -> None:
    upstream, log = serve("--behave", "honest", "--writer")
    code, report = run_validate(held_config(tmp_path, [upstream], writer=True))
    assert (code, report["verdict"], report["reason"]) == (1, "UNAVAILABLE", "partial")
    calls = _calls(log)
    assert calls and not any(Draft202012Validator(INPUT).is_valid(a) for a in calls)


def test_invalid_input_executed_by_an_owned_server_fails(tmp_path: Path, serve: Any) -> None:
    upstream, log = serve("--behave", "lax", "--writer")
    code, report = run_validate(held_config(tmp_path, [upstream], writer=True))
    assert (code, report["verdict"]) == (1, "FAILED")
    assert {o["finding"] for o in report["observations"]} == {"invalid_input_executed"}
    assert not any(Draft202012Validator(INPUT).is_valid(a) for a in _calls(log))
