"""`mcpward console` refuses what it must before it serves anything."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from mcpward.cli.main import app
from tests.console.state import ADMIN_TOKEN
from tests.support.gateway import write_gateway_config


def _run(tmp_path: Path, token: str, mode: int, *extra: str) -> tuple[int, str]:
    config = write_gateway_config(tmp_path, [{"id": "x", "command": "true"}])
    token_file = tmp_path / "admin.token"
    token_file.write_text(token, encoding="utf-8")
    token_file.chmod(mode)
    args = ["console", "--config", str(config), "--token-file", str(token_file), *extra]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_a_non_loopback_listen_needs_the_opt_in(tmp_path: Path) -> None:
    code, out = _run(tmp_path, ADMIN_TOKEN, 0o600, "--listen", "0.0.0.0:8932")
    assert code == 2 and "--allow-non-loopback" in out
    code, out = _run(
        tmp_path, ADMIN_TOKEN, 0o600, "--listen", "0.0.0.0:8932", "--allow-non-loopback"
    )
    assert code == 2 and "--allowed-host" in out


def test_a_loose_or_short_token_file_is_refused(tmp_path: Path) -> None:
    code, out = _run(tmp_path, ADMIN_TOKEN, 0o644)
    assert code == 2 and "chmod 600" in out
    code, out = _run(tmp_path, "short", 0o600)
    assert code == 2 and "24..512 characters" in out
    code, out = _run(tmp_path, ADMIN_TOKEN, 0o600, "--listen", "nonsense")
    assert code == 2 and "HOST:PORT" in out


def test_a_port_in_use_fails_cleanly_before_the_success_line(tmp_path: Path) -> None:
    """As `run` does: one sentence with the fix, exit 2, no "console on" line (issue #25)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, out = _run(tmp_path, ADMIN_TOKEN, 0o600, "--listen", f"127.0.0.1:{port}")
    assert code == 2, out
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in out
    assert "--listen HOST:PORT" in out
    assert "mcpward console on" not in out


def test_the_console_opens_on_a_state_dir_with_no_config_and_no_token_file(
    tmp_path: Path,
) -> None:
    """`mcpward console --state-dir D`: no config, a token made in D (mode 600) and named, the
    state directory's holds served (issue #25, section 3)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "mcpward.cli.main", "console", "--state-dir", str(state)]
    argv += ["--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        made = proc.stdout.readline()
        token_file = state / "console-admin.token"
        assert made.strip() == f"made an admin token in {token_file} (mode 600)"
        serving = proc.stdout.readline()
        assert f"mcpward console on http://127.0.0.1:{port}/ (state: {state})" in serving
        assert f"sign in with the token in {token_file}" in serving
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        for _ in range(100):
            try:
                response = httpx.get(
                    f"http://127.0.0.1:{port}/holds",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=5,
                )
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert response.status_code == 200, response.text
    finally:
        proc.terminate()
        proc.wait(10)
