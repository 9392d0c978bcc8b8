"""Evidence benchmark: ledger appends per second, and the per-call latency evidence adds.

Run: .venv/bin/python benchmarks/ledger.py [--receipts 50000] [--calls 300]
Prints numbers and ratios against the no-evidence path of the same run; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.record import DecisionRecord
from mcpward.evidence.recorder import build_recorder
from mcpward.evidence.settings import EvidencePaths, EvidenceSettings
from mcpward.pipeline.context import Identity
from mcpward.pipeline.executor import GuardRun


def sample(i: int) -> DecisionRecord:
    """A typical tools/call decision: two guards ran, small arguments and a small text result."""
    return DecisionRecord(
        started_at=time.time(),
        method="tools/call",
        upstream="time",
        name="get_current_time",
        decision="allow",
        session_id="bench",
        era="handshake",
        identity=Identity("bench-user", client_id="bench-client"),
        arguments={"timezone": "Europe/Paris", "i": i},
        result={
            "content": [{"type": "text", "text": "2026-11-22T10:00:00+01:00"}],
            "isError": False,
        },
        tool_definition={"name": "get_current_time", "annotations": {"readOnlyHint": True}},
        runs=[
            GuardRun("tool_filter", "tool_filter", "tool_invoke", "allow", 0.02),
            GuardRun("secrets", "secrets", "tool_result", "allow", 0.05),
        ],
        gateway_ms=0.3,
        upstream_ms=1.2,
    )


def bench_receipt_build(n: int) -> float:
    records = [sample(i) for i in range(n)]
    gc.freeze()
    started = time.perf_counter()
    for record in records:
        build_receipt(record)
    elapsed = time.perf_counter() - started
    gc.unfreeze()
    return elapsed / n * 1e6


def bench_ledger_append(n: int, batch: int) -> tuple[float, float]:
    """Prebuilt receipts appended in group commits of `batch` (the ledger alone)."""
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger.open(EvidencePaths.resolve(Path(tmp)), synchronous="NORMAL")
        pending = [PendingEntry.of_receipt(build_receipt(sample(i)), time.time()) for i in range(n)]
        started, cpu = time.perf_counter(), time.process_time()
        for at in range(0, n, batch):
            ledger.append(pending[at : at + batch])
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        ledger.close()
    return n / elapsed, n / cpu


async def _recorder_rate(n: int, durability: str, concurrency: int) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = EvidenceSettings.model_validate({"durability": durability})
        recorder = build_recorder(settings, Path(tmp))
        records = [sample(i) for i in range(n)]
        # The input batch is the benchmark's, not the gateway's: keep the collector off it.
        gc.freeze()
        started, cpu = time.perf_counter(), time.process_time()
        if concurrency == 1:
            for record in records:
                await recorder.record(record)
        else:
            for at in range(0, n, concurrency):
                await asyncio.gather(*(recorder.record(r) for r in records[at : at + concurrency]))
        await recorder.close()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        gc.unfreeze()
        state = verify_ledger(EvidencePaths.resolve(Path(tmp))).state.value
    return n / elapsed, n / cpu, state


def _gateway_config(directory: Path, evidence: dict[str, Any]) -> Path:
    config = {
        "version": 1,
        "upstreams": [
            {"id": "demo", "command": sys.executable, "args": ["-m", "mcpward.demo.server"]}
        ],
        "guards": {
            "replace_defaults": True,
            "list": [
                {
                    "kind": "tool_filter",
                    "priority": 10,
                    "runs_on": ["tools_list", "tool_invoke"],
                    "config": {"rules": [{"deny": ["delete_*"]}]},
                }
            ],
        },
        "state_dir": str(directory / "state"),
        "logging": {"level": "warning", "file": str(directory / "gateway.log")},
        "evidence": evidence,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "mcpward.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


async def _interleaved_calls(configs: dict[str, Path], calls: int) -> dict[str, list[float]]:
    """One gateway per variant, all open at once; calls alternate between them, so a busy
    machine slows every variant alike."""
    from contextlib import AsyncExitStack

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    samples: dict[str, list[float]] = {name: [] for name in configs}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, path in configs.items():
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "mcpward.cli.main", "run", "--config", str(path)],
            )
            clients[name] = await stack.enter_async_context(
                Client(params, mode="legacy", cache=None)
            )
        for client in clients.values():
            for _ in range(20):  # warm up: upstream started, lists cached
                await client.call_tool("echo", {"message": "warm"})
        for i in range(calls):
            for name, client in clients.items():
                started = time.perf_counter()
                await client.call_tool("echo", {"message": f"call {i}"})
                samples[name].append((time.perf_counter() - started) * 1000.0)
    return samples


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
    return f"p50 {p50:7.3f} ms  p99 {p99:7.3f} ms  mean {statistics.fmean(ordered):7.3f} ms"


async def bench_gateway(calls: int) -> None:
    variants: dict[str, dict[str, Any]] = {
        "no evidence": {"enabled": False},
        "evidence, sync": {"durability": "sync"},
        "evidence, batched": {"durability": "batched"},
    }
    with tempfile.TemporaryDirectory() as tmp:
        configs = {
            name: _gateway_config(Path(tmp) / str(n), evidence)
            for n, (name, evidence) in enumerate(variants.items())
        }
        results = await _interleaved_calls(configs, calls)
        for name, samples in results.items():
            ledger = EvidencePaths.resolve(configs[name].parent / "state").ledger
            recorded = "" if name == "no evidence" or ledger.exists() else "  (NO LEDGER WRITTEN)"
            print(f"  {name:<20} {_summary(samples)}{recorded}")
    base = statistics.median(results["no evidence"])
    for name in ("evidence, sync", "evidence, batched"):
        added = statistics.median(results[name]) - base
        print(f"  added by {name:<18} {added:+.3f} ms per call at p50 ({added / base:+.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--receipts", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--no-gateway", action="store_true", help="Skip the end-to-end part.")
    args = parser.parse_args()
    n = args.receipts
    print("(wall rate; in brackets the rate per CPU-second, less sensitive to a busy machine)")
    print(f"receipt build: {bench_receipt_build(min(n, 20_000)):.1f} us per receipt")
    wall, per_cpu = bench_ledger_append(n, 2048)
    print(f"ledger append, prebuilt receipts, commits of 2048:  {wall:9,.0f}/s [{per_cpu:,.0f}]")
    rows = [
        ("recorder batched, 1 caller (build+append)", n, "batched", 1),
        ("recorder sync, 64 concurrent (group commit)", min(n, 20_000), "sync", 64),
        ("recorder sync, 1 caller (fsync per receipt)", min(n, 2_000), "sync", 1),
    ]
    for label, count, durability, callers in rows:
        wall, per_cpu, state = asyncio.run(_recorder_rate(count, durability, callers))
        print(f"{label:<50} {wall:9,.0f}/s [{per_cpu:,.0f}]  verify: {state}")
    print("goal: >= 20,000 appends/s in batched mode")
    if not args.no_gateway:
        print(
            f"through the gateway: {args.calls} sequential tools/call (demo echo) per variant, "
            "interleaved:"
        )
        asyncio.run(bench_gateway(args.calls))


if __name__ == "__main__":
    main()
