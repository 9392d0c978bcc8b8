"""No orphan upstream survives the gateway: clean exit, signals, SIGKILL of its parent or itself."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpward.testing.rawpeer import RawPeer
from tests.relay.conftest import echo_upstream
from tests.support.gateway import gateway_argv, write_gateway_config
from tests.support.processes import (
    assert_no_survivors,
    kill_all,
    processes_mentioning,
    wait_for_processes,
    wait_until_gone,
)


def stubborn_config(tmp_path: Path) -> tuple[Path, str]:
    """Two upstreams ignoring SIGTERM and stdin EOF, each with a grandchild; a marker finds them."""
    marker = f"mcpward-orphan-{tmp_path.name}"
    ups = []
    for name in ("a", "b"):
        up = echo_upstream(name, ECHO_STUBBORN="1", ECHO_CHILD="1")
        up["args"] = [*up["args"], marker]
        ups.append(up)
    config = write_gateway_config(tmp_path, ups, guards=[], gateway={"relist_interval_s": 0})
    return config, marker


async def started_gateway(config: Path) -> RawPeer:
    peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
    await peer.initialize()
    await peer.call("tools/call", {"name": "a__echo", "arguments": {}})
    return peer


def wait_upstreams(marker: str) -> None:
    # two upstreams + two grandchildren (plus the lifeline supervisors, which carry the marker too)
    found = wait_for_processes(lambda p: marker in p.cmdline, count=4, timeout=15)
    assert len(found) >= 4, [p.cmdline for p in found]


@pytest.mark.parametrize("how", ["eof", "sigterm", "sigint", "sigkill"])
async def test_no_orphans_when_the_gateway_ends(tmp_path: Path, how: str) -> None:
    config, marker = stubborn_config(tmp_path)
    peer = await started_gateway(config)
    try:
        wait_upstreams(marker)
        if how == "eof":
            code = await peer.close(timeout=15)
            assert code == 0
        else:
            sig = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT, "sigkill": signal.SIGKILL}[
                how
            ]
            peer.proc.send_signal(sig)
            await asyncio.wait_for(peer.proc.wait(), 15)
        await asyncio.to_thread(assert_no_survivors, marker, 10)
    finally:
        kill_all([p.pid for p in processes_mentioning(marker)], signal.SIGKILL)
        if peer.proc.returncode is None:
            peer.proc.kill()


def test_no_orphans_when_the_gateways_parent_is_killed(tmp_path: Path) -> None:
    """A client (the parent) dies by SIGKILL: the gateway reads EOF and takes its upstreams down."""
    config, marker = stubborn_config(tmp_path)
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "p", "version": "1"},
    }
    parent_script = textwrap.dedent(
        f"""
        import json, subprocess, sys, time
        PIPE = subprocess.PIPE
        gw = subprocess.Popen({gateway_argv(config)!r}, stdin=PIPE, stdout=PIPE)
        def rpc(i, method, params):
            msg = {{"jsonrpc": "2.0", "id": i, "method": method, "params": params}}
            gw.stdin.write(json.dumps(msg).encode() + b"\\n")
            gw.stdin.flush()
            return gw.stdout.readline()
        rpc(1, "initialize", {init!r})
        rpc(2, "tools/call", {{"name": "b__echo", "arguments": {{}}}})
        print("ready", gw.pid, flush=True)
        time.sleep(300)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_script], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line.startswith("ready"), line
        gateway_pid = int(line.split()[1])
        wait_upstreams(marker)
        parent.kill()
        parent.wait(10)
        assert_no_survivors(marker, 10)
        assert wait_until_gone([gateway_pid], 10) == []  # the gateway itself exits too
    finally:
        kill_all([p.pid for p in processes_mentioning(marker)], signal.SIGKILL)
        kill_all([gateway_pid] if "gateway_pid" in locals() else [], signal.SIGKILL)
        parent.kill()
