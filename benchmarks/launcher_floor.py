"""Issue #24, item 6: the floor of "one gateway per user, reached by a small launcher per wired
server over a user-only Unix socket", measured before anything of it is built.

A desktop client would start `launcher SOCKET` instead of `mcpward run -- CMD`; the launcher
connects to an already running per-user gateway and copies bytes both ways. What a wired server
would then cost is the launcher's start and memory, plus the gateway's per-session work (here:
none; a stand-in daemon that spawns the server and relays, so the numbers are a floor):

    .venv/bin/python benchmarks/launcher_floor.py [--rounds 5] [--copies 10]

Prints spawn -> initialize answered and the launcher's RSS/Pss beside the server alone, one
interleaved run; and ten launchers at once. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ECHO = ROOT / "tests" / "fixtures" / "echo_upstream.py"

# The launcher itself: standard library only, no site (as the lifeline): connect, then copy.
LAUNCHER = r"""
import os, select, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
ends = {0: conn.fileno(), conn.fileno(): 1}
while ends:
    for fd in select.select(list(ends), [], [])[0]:
        data = os.read(fd, 65536)
        if not data:
            raise SystemExit(0)
        os.write(ends[fd], data) if ends[fd] == 1 else conn.sendall(data)
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "floor", "version": "1"},
    },
}


async def serve_daemon(path: str) -> asyncio.AbstractServer:
    """The stand-in per-user gateway: each connection gets a freshly spawned server."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ECHO),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pump(reader, proc.stdin), pump(proc.stdout, writer))
        await proc.wait()

    server = await asyncio.start_unix_server(session, path)
    os.chmod(path, 0o600)  # user-only, as a real one must be
    return server


def rss_pss(pid: int) -> tuple[float, float]:
    rss = pss = 0.0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("Pss:"):
            pss = int(line.split()[1]) / 1024
    return rss, pss


def spawn_to_initialize(argv: list[str]) -> tuple[float, subprocess.Popen[bytes]]:
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer.get("id") == 1 and "result" in answer, answer
    return (time.perf_counter() - started) * 1000, proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gateway.sock")
        launcher = Path(tmp) / "launcher.py"
        launcher.write_text(LAUNCHER)
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(serve_daemon(path))
        import threading

        threading.Thread(target=loop.run_forever, daemon=True).start()
        targets = {
            "server alone": [sys.executable, str(ECHO)],
            "launcher -> per-user daemon -> server": [
                sys.executable,
                "-I",
                "-S",
                str(launcher),
                path,
            ],
        }
        times: dict[str, list[float]] = {name: [] for name in targets}
        memory: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
        names = list(targets)
        for round_no in range(args.rounds):
            for name in names[round_no % 2 :] + names[: round_no % 2]:
                took, proc = spawn_to_initialize(targets[name])
                times[name].append(took)
                memory[name].append(rss_pss(proc.pid))
                stop(proc)
        print(f"load average (1 min): {os.getloadavg()[0]:.2f}; {args.rounds} interleaved rounds")
        print("| path | spawn -> initialize ms | process spawned: RSS / Pss MiB |")
        print("|---|---|---|")
        for name in names:
            rss = statistics.median(m[0] for m in memory[name])
            pss = statistics.median(m[1] for m in memory[name])
            print(f"| {name} | {spread(times[name])} | {rss:.1f} / {pss:.1f} |")
        base = statistics.median(times["server alone"])
        added = statistics.median(times[names[1]]) - base
        print(f"\nadded by the launcher path (median minus median): {added:.0f} ms")
        if args.copies:
            for name in names:
                started = time.perf_counter()
                procs = [
                    subprocess.Popen(targets[name], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                    for _ in range(args.copies)
                ]
                for proc in procs:
                    assert proc.stdin is not None
                    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
                    proc.stdin.flush()
                for proc in procs:
                    assert proc.stdout is not None
                    json.loads(proc.stdout.readline())
                took = (time.perf_counter() - started) * 1000
                total = [rss_pss(p.pid) for p in procs]
                for proc in procs:
                    stop(proc)
                print(
                    f"{args.copies} at once, {name}: all answered in {took:.0f} ms; the spawned "
                    f"processes' RSS {sum(t[0] for t in total):.0f} MiB, "
                    f"Pss {sum(t[1] for t in total):.0f} MiB"
                )
        loop.call_soon_threadsafe(server.close)


if __name__ == "__main__":
    main()
