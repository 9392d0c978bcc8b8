"""stdin and stdout redirected to regular files (`mcpward run < requests.jsonl > out.jsonl`): every
request is answered, in a file, and the gateway exits cleanly at the end of its input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.relay.conftest import echo_upstream
from tests.support.gateway import write_gateway_config


def test_requests_from_a_file_are_all_answered_into_a_file(tmp_path: Path) -> None:
    config = write_gateway_config(tmp_path, [echo_upstream("a")], guards=None)
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "file", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in requests))
    target = tmp_path / "out.jsonl"
    with source.open("rb") as stdin, target.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "mcpward.cli.main", "run", "--config", str(config)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0
    answers = {m["id"]: m for m in map(json.loads, target.read_text().splitlines()) if "id" in m}
    assert sorted(answers) == [1, 2, 3]
    assert "result" in answers[3], answers[3]
