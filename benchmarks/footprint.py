"""Footprint benchmark (issue #24): what a gateway costs a user before and after it has served
calls, next to the server alone and the peer gateways, interleaved in one run.

    .venv/bin/python benchmarks/footprint.py [--rounds 5] [--calls 1000] [--server echo|time|both]
                                             [--targets server,mcpward,bare,mcpindex,firewall]
                                             [--desktop 10] [--json FILE] [--quick]

Targets, each wrapping the same stdio server:
- `server`: the server alone (no gateway);
- `mcpward`: `mcpward run -- CMD`, the defaults (every default guard, crash_safe receipts);
- `bare`: `mcpward run --config F`, F with the one upstream, no guard at all
  (`guards: {replace_defaults: true, list: []}`) and
  `evidence: {enabled: false}` (no receipts): the gateway's floor;
- `mcpindex`, `firewall`: the peers of benchmarks/peers.py (`mcpindex-proxy` in its default
  posture, `mcp-firewall wrap` with its rate limit raised); skipped with a reason when they cannot
  be installed or do not relay.

Servers: `echo` is tests/fixtures/echo_upstream.py (raw JSON-RPC, no SDK; `tools/call echo`),
`time` is mcp-server-time (the mcp SDK; `tools/call get_current_time` with a timezone).

Per round and target (rounds interleaved, each in a rotated order of the targets): spawn, send
`initialize` at once and time Popen -> its answer read on stdout (time.perf_counter); send
`notifications/initialized` and read the memory; `tools/list`, then `--calls` sequential
`tools/call`s (one in flight) and read the memory again. Memory is the gateway's own processes:
the process spawned (every target's console script execs its Python: the process is the gateway
itself, no wrapper) plus its descendants except the upstream server and what it spawned (for
mcpward: its lifeline supervisor); the `server` row is the server's process. Per process:
/proc/PID/status VmRSS and VmHWM (peak RSS), and /proc/PID/smaps_rollup Pss (shared pages split
among the processes that map them), summed over the gateway's processes.

Desktop case (`--desktop N`, 0 = off): N copies of a target spawned back to back as a client
starts its servers, each sent `initialize` right away; the time from the first Popen until all N
answered, and the summed memory of the N gateways (upstreams left out) once all have answered.

Before the rounds each target runs once untimed (initialize, tools/list, one call): page cache
warm, contracts pinned (mcpward, mcpindex-proxy), and a peer that does not relay is skipped.
`--quick` is a smoke test: 2 rounds, 100 calls, echo only.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import peers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
TIMEOUT_S = 120.0
PROTOCOL = "2025-06-18"
TARGETS = ("server", "mcpward", "bare", "mcpindex", "firewall")


@dataclass(frozen=True)
class Server:
    name: str
    label: str
    argv: list[str]
    call: dict[str, Any]  # the tools/call params


SERVERS = {
    "echo": Server(
        "echo",
        "echo_upstream.py (raw JSON-RPC, no SDK)",
        [sys.executable, str(ROOT / "tests" / "fixtures" / "echo_upstream.py")],
        {"name": "echo", "arguments": {"message": "hello"}},
    ),
    "time": Server(
        "time",
        "mcp-server-time (mcp SDK)",
        [sys.executable, str(BIN / "mcp-server-time")],  # its entry point, run by the venv
        {"name": "get_current_time", "arguments": {"timezone": "Europe/Warsaw"}},
    ),
}


@dataclass
class Target:
    name: str
    label: str
    argv: list[str]
    env: dict[str, str]


@dataclass
class Memory:
    """Summed over a gateway's processes, KiB; `processes` names them, `rss_each` their RSS."""

    rss: int = 0
    hwm: int = 0
    pss: int = 0
    processes: list[str] = field(default_factory=list)
    rss_each: list[int] = field(default_factory=list)

    def add(self, other: Memory) -> None:
        self.rss, self.hwm, self.pss = (
            self.rss + other.rss,
            self.hwm + other.hwm,
            self.pss + other.pss,
        )
        self.processes += other.processes
        self.rss_each += other.rss_each


@dataclass
class Run:
    round: int
    server: str
    target: str
    spawn_ms: float
    init: Memory
    after_calls: Memory
    calls: int
    calls_s: float  # how long the sequential calls took


@dataclass
class Desktop:
    round: int
    server: str
    target: str
    copies: int
    all_answered_ms: float
    memory: Memory


# ---------------------------------------------------------------------------------------------
# /proc


def _field_kib(path: Path, name: str) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def _describe(pid: int) -> str:
    """`mcpward`, `lifeline.py`, `echo_upstream.py`: the script a Python process runs."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    words = [a for a in argv[1:] if not a.startswith("-")] if "python" in argv[0] else argv
    return Path(words[0] if words else argv[0]).name


def memory(pids: Sequence[int]) -> Memory:
    out = Memory()
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status")
            one = Memory(
                _field_kib(status, "VmRSS"),
                _field_kib(status, "VmHWM"),
                _field_kib(Path(f"/proc/{pid}/smaps_rollup"), "Pss"),
                [_describe(pid)],
            )
        except OSError:  # gone between the listing and the read
            continue
        one.rss_each.append(one.rss)
        out.add(one)
    return out


def measured_pids(target: str, pid: int, upstream: Sequence[str]) -> list[int]:
    return [pid] if target == "server" else peers.gateway_pids(pid, upstream)


# ---------------------------------------------------------------------------------------------
# one JSON-RPC client over the spawned process' pipes


class Client:
    """Newline-delimited JSON-RPC on a process' stdin/stdout, with a deadline on every read."""

    def __init__(self, argv: list[str], env: dict[str, str], stderr: Path) -> None:
        with stderr.open("ab") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
            )
        self.stderr = stderr
        self.buffer = b""
        self.next_id = 1

    def send(self, method: str, params: dict[str, Any] | None = None, notify: bool = False) -> int:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        rid = self.next_id
        if not notify:
            msg["id"] = rid
            self.next_id += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"no answer in {TIMEOUT_S:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError(f"stdout closed; stderr: {self.tail()}")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def answer(self, rid: int) -> dict[str, Any]:
        """The result of request `rid` (notifications read past); an error answer raises."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            line = self._line(deadline)
            if not line.strip():
                continue
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"error answer: {str(msg['error'])[:200]}")
                result: dict[str, Any] = msg["result"]
                return result

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer(self.send(method, params))

    def initialize(self) -> int:
        return self.send(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "footprint-bench", "version": "1"},
            },
        )

    def tail(self) -> str:
        try:
            lines = self.stderr.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-3:])[-400:]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# ---------------------------------------------------------------------------------------------
# the measurements


def call_ok(result: dict[str, Any]) -> None:
    if result.get("isError") or not result.get("content"):
        raise RuntimeError(f"tools/call answered {str(result)[:200]}")


def run_once(target: Target, server: Server, calls: int, tmp: Path, round_: int) -> Run:
    """Spawn -> initialize answered, memory; tools/list and `calls` calls, memory again."""
    t0 = time.perf_counter()
    client = Client(target.argv, target.env, tmp / f"{server.name}-{target.name}.stderr")
    try:
        rid = client.initialize()
        client.answer(rid)
        spawn_ms = (time.perf_counter() - t0) * 1e3
        client.send("notifications/initialized", notify=True)
        pids = measured_pids(target.name, client.proc.pid, server.argv)
        init = memory(pids)
        client.request("tools/list", {})
        t1 = time.perf_counter()
        for _ in range(calls):
            call_ok(client.request("tools/call", server.call))
        calls_s = time.perf_counter() - t1
        after = memory(measured_pids(target.name, client.proc.pid, server.argv))
    finally:
        client.close()
    return Run(round_, server.name, target.name, spawn_ms, init, after, calls, calls_s)


def desktop_once(target: Target, server: Server, copies: int, tmp: Path, round_: int) -> Desktop:
    """`copies` processes spawned back to back, each sent initialize at once; until all answer."""
    clients: list[Client] = []
    t0 = time.perf_counter()
    try:
        for i in range(copies):
            stderr = tmp / f"desktop-{server.name}-{target.name}-{i}.stderr"
            clients.append(Client(target.argv, target.env, stderr))
            clients[-1].initialize()
        for client in clients:  # the pipes hold early answers: the last read ends at the last
            client.answer(1)
        elapsed = (time.perf_counter() - t0) * 1e3
        total = Memory()
        for client in clients:
            client.send("notifications/initialized", notify=True)
            total.add(memory(measured_pids(target.name, client.proc.pid, server.argv)))
    finally:
        for client in clients:
            client.close()
    return Desktop(round_, server.name, target.name, copies, elapsed, total)


def warm_up(target: Target, server: Server, tmp: Path) -> str | None:
    """None when `target` relays initialize, tools/list and one call; else what went wrong."""
    try:
        run_once(target, server, 1, tmp, -1)
    except Exception as exc:  # a peer may fail in any way: report and skip it
        return f"{type(exc).__name__}: {exc}"
    return None


# ---------------------------------------------------------------------------------------------
# targets


def mcpward_config(directory: Path, server: Server) -> Path:
    """The one stdio upstream, no guard (the defaults replaced by none) and no receipts."""
    path = directory / f"bare-{server.name}.yaml"
    path.write_text(
        f"upstreams:\n  - id: {server.name}\n    command: {json.dumps(server.argv[0])}\n"
        f"    args: {json.dumps(server.argv[1:])}\n"
        "guards: {replace_defaults: true, list: []}\nevidence: {enabled: false}\n"
    )
    return path


def make_targets(
    server: Server, wanted: Sequence[str], tmp: Path, log: Callable[[str], object]
) -> list[Target]:
    directory = tmp / server.name
    directory.mkdir()
    # one state directory per server, as a user's: pins and receipts persist between runs
    env = {**os.environ, "MCPWARD_STATE_DIR": str(directory / "mcpward-state")}
    mcpward = str(BIN / "mcpward")
    out = []
    if "server" in wanted:
        out.append(Target("server", "server alone", server.argv, env))
    if "mcpward" in wanted:
        argv = [mcpward, "run", "--", *server.argv]
        out.append(Target("mcpward", "mcpward run -- CMD (defaults)", argv, env))
    if "bare" in wanted:
        argv = [mcpward, "run", "--config", str(mcpward_config(directory, server))]
        out.append(Target("bare", "mcpward bare (no guards, no receipts)", argv, env))
    if "mcpindex" in wanted:
        peer = peers.ensure(peers.MCPINDEX, log)
        if peer is not None:
            argv = peers.mcpindex_argv(peer, directory, server.argv)
            label = f"mcpindex-proxy {peer.version} (guard)"
            out.append(Target("mcpindex", label, argv, peers.mcpindex_env(env, directory)))
    if "firewall" in wanted:
        peer = peers.ensure(peers.FIREWALL, log)
        if peer is not None:
            argv = peers.firewall_argv(peer, directory, server.argv)
            label = f"mcp-firewall wrap {peer.version}"
            out.append(Target("firewall", label, argv, env))
    return out


# ---------------------------------------------------------------------------------------------
# report


def mib(values: Sequence[int]) -> str:
    return peers.spread([v / 1024 for v in values], ".1f")


def main_table(runs: list[Run], targets: list[Target], server: Server, calls: int) -> list[str]:
    base = {r.round: r.spawn_ms for r in runs if r.target == "server"}
    lines = [
        f"| target | spawn\u2192initialize ms | added vs server ms | RSS after init MiB "
        f"| RSS after {calls:,} calls MiB | peak (VmHWM) MiB | Pss after init MiB "
        f"| Pss after {calls:,} calls MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for target in targets:
        mine = [r for r in runs if r.target == target.name]
        added = [r.spawn_ms - base[r.round] for r in mine if r.round in base]
        cells = [
            target.label,
            peers.spread([r.spawn_ms for r in mine]),
            "\u2013" if target.name == "server" else peers.spread(added),
            mib([r.init.rss for r in mine]),
            mib([r.after_calls.rss for r in mine]),
            mib([r.after_calls.hwm for r in mine]),
            mib([r.init.pss for r in mine]),
            mib([r.after_calls.pss for r in mine]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def desktop_table(runs: list[Desktop], targets: list[Target], copies: int) -> list[str]:
    base = {r.round: r.all_answered_ms for r in runs if r.target == "server"}
    lines = [
        f"| {copies} at once | all answered initialize ms | added vs servers ms "
        "| total RSS MiB | total Pss MiB | RSS per gateway MiB |",
        "|---|---|---|---|---|---|",
    ]
    for target in targets:
        mine = [r for r in runs if r.target == target.name]
        added = [r.all_answered_ms - base[r.round] for r in mine if r.round in base]
        cells = [
            target.label,
            peers.spread([r.all_answered_ms for r in mine]),
            "\u2013" if target.name == "server" else peers.spread(added),
            mib([r.memory.rss for r in mine]),
            mib([r.memory.pss for r in mine]),
            f"{statistics.median(r.memory.rss for r in mine) / copies / 1024:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def measured_note(runs: list[Run], targets: list[Target]) -> list[str]:
    """Which processes each row sums, with their RSS after the calls in the first round: read
    from the runs, not assumed."""
    out = []
    for target in targets:
        seen = next((r.after_calls for r in runs if r.target == target.name), Memory())
        each = zip(seen.processes, seen.rss_each, strict=True)
        what = " + ".join(f"{name} {kib / 1024:.1f} MiB" for name, kib in each) or "?"
        kind = "the server's process" if target.name == "server" else "upstream excluded"
        out.append(f"- {target.label}: {what} ({kind})")
    return out


def rotated(targets: list[Target], round_: int) -> list[Target]:
    """Round r starts at the r-th target: no target always runs first (or after the same one)."""
    shift = round_ % len(targets)
    return targets[shift:] + targets[:shift]


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}, load {load():.2f}] {text}", file=sys.stderr, flush=True)


def load() -> float:
    return os.getloadavg()[0]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (5)")
    parser.add_argument("--calls", type=int, default=None, help="calls per run (1000)")
    parser.add_argument("--server", choices=("echo", "time", "both"), default=None)
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma list of targets")
    parser.add_argument("--desktop", type=int, default=10, help="copies at once; 0: off")
    parser.add_argument("--json", type=Path, default=None, help="write the raw numbers here")
    parser.add_argument("--quick", action="store_true", help="2 rounds, 100 calls, echo only")
    args = parser.parse_args(argv)
    quick = (2, 100, "echo") if args.quick else (5, 1000, "both")
    args.rounds = args.rounds or quick[0]
    args.calls = args.calls or quick[1]
    args.server = args.server or quick[2]
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(args.targets) - set(TARGETS)
    if unknown or "server" not in args.targets:
        parser.error(f"--targets: one of {', '.join(TARGETS)}, `server` included ({unknown})")
    if args.rounds < 1 or args.calls < 1 or args.desktop < 0:
        parser.error("--rounds and --calls >= 1, --desktop >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    started = time.perf_counter()
    servers = [SERVERS[s] for s in (("echo", "time") if args.server == "both" else (args.server,))]
    print("# mcpward footprint (benchmarks/footprint.py)\n")
    start_load = load()
    print(f"load average (1 min) at start: {start_load:.2f} ({os.cpu_count()} CPUs)")
    print(
        f"{args.rounds} interleaved rounds (rotated order), {args.calls:,} sequential calls per "
        f"run; desktop: {args.desktop or 'off'}; median (min\u2013max) over the rounds"
    )
    raw: dict[str, Any] = {"args": {**vars(args), "json": str(args.json)}, "servers": {}}
    report: list[str] = []
    with tempfile.TemporaryDirectory(prefix="footprint-") as name:
        tmp = Path(name)
        for server in servers:
            targets = make_targets(server, args.targets, tmp, print)
            kept = []
            for target in targets:  # untimed: warm caches, first-sight pins, peers checked
                problem = warm_up(target, server, tmp)
                if problem is None:
                    kept.append(target)
                else:
                    print(f"  skipped {target.label} on {server.name}: {problem}")
            if not kept:
                continue
            runs: list[Run] = []
            for r in range(args.rounds):
                progress(f"{server.name}: round {r + 1}/{args.rounds}")
                for target in rotated(kept, r):
                    runs.append(run_once(target, server, args.calls, tmp, r))
            desktops: list[Desktop] = []
            for r in range(args.rounds if args.desktop else 0):
                progress(f"{server.name}: desktop round {r + 1}/{args.rounds}")
                for target in rotated(kept, r):
                    desktops.append(desktop_once(target, server, args.desktop, tmp, r))
            report += [f"\n## {server.label}\n", *main_table(runs, kept, server, args.calls)]
            report += ["\nmeasured processes (summed per row):", *measured_note(runs, kept)]
            if desktops:
                report += [f"\ndesktop, {server.label}:\n"]
                report += desktop_table(desktops, kept, args.desktop)
            raw["servers"][server.name] = {
                "targets": {t.name: {"label": t.label, "argv": t.argv} for t in kept},
                "runs": [asdict(r) for r in runs],
                "desktop": [asdict(d) for d in desktops],
            }
    print("\n".join(report))
    print(
        "\nRSS: /proc/PID/status VmRSS; peak: VmHWM; Pss: /proc/PID/smaps_rollup (shared pages "
        "split among the processes mapping them). added = target minus the server alone, same "
        "round, then the median."
    )
    for name, spec in (("mcpindex", peers.MCPINDEX), ("firewall", peers.FIREWALL)):
        if name in args.targets:
            print(f"note: {peers.GROWTH[spec.name]}")
    end_load = load()
    print(
        f"\nload average (1 min) at end: {end_load:.2f}; took {time.perf_counter() - started:.0f} s"
    )
    if args.json:
        raw["load_1min"] = {"start": start_load, "end": end_load}
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
