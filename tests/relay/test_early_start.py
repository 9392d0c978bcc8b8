"""A stdio gateway starts its server before it has finished setting itself up (issue #24): the
server's process is running before the client has sent anything, and the first session is served
by that same process, not a second one. A server a guard could refuse is not started early.

Tests of order and identity, not of time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.gateway import GATEWAY_MODULE, write_gateway_config
from tests.support.processes import ProcessInfo, find_processes, wait_for_processes

ECHO = str(Path(__file__).resolve().parents[1] / "fixtures" / "echo_upstream.py")


def is_upstream(marker: str) -> Any:
    def match(info: ProcessInfo) -> bool:
        words = info.cmdline.split()
        return marker in words and ECHO in words and "run" not in words and "--" not in words

    return match


def ask(stdin: IO[bytes], stdout: IO[bytes], message: dict[str, Any]) -> dict[str, Any]:
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()
    while True:
        answer = json.loads(stdout.readline())
        if answer.get("id") == message["id"]:
            return dict(answer)


@pytest.fixture
def marker(request: pytest.FixtureRequest) -> str:
    name = "".join(c if c.isalnum() else "-" for c in request.node.name)
    return f"mcpward-early-{os.getpid()}-{name}"


def gateway(argv: list[str], state: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "MCPWARD_STATE_DIR": str(state)}
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def quick(marker: str, state: Path) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, *GATEWAY_MODULE, "run", "--env", "ECHO_TOOLS=echo,pid"]
    return gateway([*argv, "--", sys.executable, ECHO, marker], state)


def from_file(
    marker: str, directory: Path, guards: Any = None
) -> Iterator[subprocess.Popen[bytes]]:
    upstream = {
        "id": "echo",
        "command": sys.executable,
        "args": [ECHO, marker],
        "env": {"ECHO_TOOLS": "echo,pid"},
    }
    config = write_gateway_config(directory, [upstream], guards=guards)
    return gateway([sys.executable, *GATEWAY_MODULE, "run", "--config", str(config)], directory)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "early", "version": "1"},
    },
}


def served_by(proc: subprocess.Popen[bytes]) -> int:
    """The pid of the process that answers this session's calls."""
    assert proc.stdin is not None and proc.stdout is not None
    assert "result" in ask(proc.stdin, proc.stdout, INITIALIZE)
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "pid"}}
    answer = ask(proc.stdin, proc.stdout, call)
    return int(answer["result"]["content"][0]["text"])


@pytest.mark.parametrize("form", ["quick", "config file"])
def test_the_server_runs_before_the_client_speaks_and_serves_the_first_session(
    form: str, marker: str, tmp_path: Path
) -> None:
    runs = quick(marker, tmp_path) if form == "quick" else from_file(marker, tmp_path)
    proc = next(runs)
    try:
        early = wait_for_processes(is_upstream(marker), timeout=60)
        assert len(early) == 1, "the server was not started before the client spoke"
        assert served_by(proc) == early[0].pid
        assert [p.pid for p in find_processes(is_upstream(marker))] == [early[0].pid]
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        runs.close()


def test_a_server_a_guard_could_refuse_waits_for_the_guards(marker: str, tmp_path: Path) -> None:
    """server_allowlist decides from the configuration once the guards are attached; until a
    session asks, nothing is started (the allow-list here admits the server)."""
    allow = {"kind": "server_allowlist", "runs_on": ["request"], "config": {"allowed": ["echo"]}}
    runs = from_file(marker, tmp_path, guards=[allow])
    proc = next(runs)
    try:
        assert wait_for_processes(is_upstream(marker), timeout=3) == []
        assert served_by(proc) > 0  # admitted: started for the session
    finally:
        runs.close()
