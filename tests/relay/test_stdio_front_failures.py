"""Issue 23, items 1 and 5: a failure met by one frame is contained (that frame is answered
-32012, the loop reads on); a failure of the read loop itself ends the process visibly (an error
line, exit status 1); stdout redirected to /dev/null works like any file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from mcpward.testing.rawpeer import RawPeer
from tests.relay.conftest import echo_upstream
from tests.support.gateway import write_gateway_config

# Runs `mcpward` with a planted fault: a message of method "test/boom" makes the relay raise
# (a bug met by one frame); a frame holding "test/die" makes reading stdin fail.
LAUNCHER = """
import sys
from mcpward.relay import session
from mcpward.streams import framing

handle = session.Session.handle
async def faulty_handle(self, frame):
    if frame.message.get("method") == "test/boom":
        raise RuntimeError("planted")
    return await handle(self, frame)
session.Session.handle = faulty_handle

read = framing.FrameReader.next
async def faulty_next(self):
    frame = await read(self)
    if isinstance(frame, bytes) and b"test/die" in frame:
        raise OSError(5, "planted read failure")
    return frame
framing.FrameReader.next = faulty_next

from mcpward.cli.main import main
main()
"""

REQUESTS = [
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
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo"}},
]


async def _spawn(tmp_path: Path) -> RawPeer:
    config = write_gateway_config(tmp_path, [echo_upstream("a")], guards=[])
    launcher = tmp_path / "launcher.py"
    launcher.write_text(LAUNCHER)
    peer = await RawPeer.spawn(
        [sys.executable, str(launcher), "run", "--config", str(config)],
        stderr=subprocess.PIPE,
    )
    await peer.initialize()
    return peer


async def test_a_failure_in_one_frame_is_answered_and_the_loop_reads_on(tmp_path: Path) -> None:
    peer = await _spawn(tmp_path)
    try:
        reply = await asyncio.wait_for(peer.request("test/boom", {}, request_id=9), 30)
        assert reply["error"]["code"] == -32012 and "incident" in reply["error"]["data"], reply
        await peer.notify("test/boom", {})
        ping = await asyncio.wait_for(peer.request("ping", None, request_id="p"), 30)
        assert ping["result"] == {}
        assert peer.proc.returncode is None
    finally:
        await peer.close()


async def test_a_failing_read_loop_ends_the_process_visibly(tmp_path: Path) -> None:
    peer = await _spawn(tmp_path)
    try:
        await peer.notify("test/die", {})
        status = await asyncio.wait_for(peer.proc.wait(), 60)
        assert peer.proc.stderr is not None
        stderr = (await peer.proc.stderr.read()).decode(errors="replace")
        assert status == 1, stderr[-2000:]
        assert "the read loop failed: OSError" in stderr
        assert "mcpward run: stopped on an error" in stderr
    finally:
        await peer.close()


def test_stdout_to_dev_null_serves_and_exits_cleanly(tmp_path: Path) -> None:
    config = write_gateway_config(tmp_path, [echo_upstream("a")], guards=None)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in REQUESTS))
    log = tmp_path / "gateway.log"
    with source.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "mcpward.cli.main", "run", "--config", str(config)],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, log.read_text()[-2000:]
    assert "shutting down (end of input)" in log.read_text()
