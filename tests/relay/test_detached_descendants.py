"""A daemon an upstream detached with setsid() (outside its process group and session) does not
outlive the gateway: the lifeline supervisor is a child subreaper and kills what it holds, on a
clean exit, on SIGKILL of the gateway, and when the upstream itself exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpward.testing.rawpeer import RawPeer
from tests.support.gateway import gateway_argv, write_gateway_config
from tests.support.processes import is_alive, read_process

DETACHING = str(Path(__file__).resolve().parents[1] / "fixtures" / "detaching_upstream.py")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux subreaper")


def detaching_upstream(pid_file: Path) -> dict[str, Any]:
    return {
        "id": "d",
        "command": sys.executable,
        "args": [DETACHING],
        "env": {
            "DETACH_PID_FILE": str(pid_file),
            "DETACH_MARKER": f"mcpward-detached-{os.getpid()}",
        },
        "restart": {"enabled": False},
    }


async def daemon_pid(pid_file: Path, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while not pid_file.exists():
        assert time.monotonic() < deadline, "the fixture never detached its daemon"
        await asyncio.sleep(0.05)
    return int(pid_file.read_text())


async def gone(pid: int, timeout: float = 20.0) -> bool:
    """Polls /proc (a generous hang guard, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while is_alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


@pytest.mark.parametrize("how", ["eof", "sigkill"])
async def test_a_setsid_daemon_dies_with_the_gateway(tmp_path: Path, how: str) -> None:
    pid_file = tmp_path / "daemon.pid"
    config = write_gateway_config(
        tmp_path, [detaching_upstream(pid_file)], guards=[], gateway={"relist_interval_s": 0}
    )
    peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
    pid = None
    try:
        await peer.initialize()
        await peer.call("tools/call", {"name": "echo", "arguments": {}})
        pid = await daemon_pid(pid_file)
        info = read_process(pid)
        # its own session and group (led by the intermediate that exited): not the upstream's
        assert info is not None and info.sid == info.pgid != os.getpgid(info.ppid), info
        if how == "eof":
            assert await peer.close(timeout=15) == 0
        else:
            peer.proc.send_signal(signal.SIGKILL)
            await asyncio.wait_for(peer.proc.wait(), 15)
        assert await gone(pid), f"the detached daemon {pid} survived the gateway ({how})"
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if peer.proc.returncode is None:
            peer.proc.kill()


async def test_a_setsid_daemon_dies_with_its_upstream(tmp_path: Path) -> None:
    """The upstream exits (here: its `crash` tool) while the gateway runs on."""
    pid_file = tmp_path / "daemon.pid"
    config = write_gateway_config(
        tmp_path, [detaching_upstream(pid_file)], guards=[], gateway={"relist_interval_s": 0}
    )
    peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
    pid = None
    try:
        await peer.initialize()
        pid = await daemon_pid(pid_file)
        await peer.request("tools/call", {"name": "crash", "arguments": {}})
        assert await gone(pid), f"the detached daemon {pid} survived its upstream"
        assert "result" in await peer.request("ping")
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await peer.close()
