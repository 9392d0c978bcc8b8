"""The lifeline starts the upstream as `subprocess.Popen` would, without importing it: PATH
lookup, the signals Python ignores back to their defaults, a clear error for a missing command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from mcpward.upstreams.stdio import LIFELINE


def run_under_lifeline(*command: str) -> subprocess.CompletedProcess[bytes]:
    read_fd, write_fd = os.pipe()
    try:
        return subprocess.run(
            [sys.executable, "-I", "-S", str(LIFELINE), str(read_fd), "--", *command],
            pass_fds=(read_fd,),
            capture_output=True,
            timeout=30,
            check=False,
            start_new_session=True,
        )
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_the_upstream_is_found_on_path_and_gets_default_signal_dispositions() -> None:
    done = run_under_lifeline("cat", "/proc/self/status")
    assert done.returncode == 0, done.stderr
    fields = dict(line.split(":", 1) for line in done.stdout.decode().splitlines() if ":" in line)
    ignored = int(fields["SigIgn"].strip(), 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))  # Python ignores it; a server must not
    assert not ignored & (1 << (signal.SIGXFSZ - 1))


def test_the_upstreams_exit_code_is_the_lifelines() -> None:
    assert run_under_lifeline("sh", "-c", "exit 7").returncode == 7


def test_a_missing_command_is_named_with_the_os_error() -> None:
    done = run_under_lifeline("mcpward-no-such-command-xyz")
    assert done.returncode == 127
    assert b"mcpward-no-such-command-xyz" in done.stderr
    assert b"No such file" in done.stderr
