"""Floors of the per-call work the defaults add to the bare relay, each alone in one thread.

    .venv/bin/python benchmarks/per_call_floor.py [--rounds 5] [--calls 5000]

The benchmark's echo call (`benchmarks/relay.py`: arguments {"message": "hello"}, a one-text
result) as the defaults judge and record it, piece by piece, in a loop with nothing else
running in the process: no event loop, no pipes, no other thread, no contention for the
interpreter lock. Each figure is the thread's CPU time (`time.thread_time`) per call, median of
`--rounds` rounds (min-max). They are floors: inside the gateway each piece costs at least this.

- a receipt built from its record (canonical payload hashes, guard entries, canonical bytes);
- the receipt sealed into the chain (HMAC) and committed to a SQLite ledger (WAL,
  synchronous=NORMAL as crash_safe commits), 16 receipts a transaction as under load;
- secrets and response_injection judging the result (the shared walk of its strings included);
- the DecisionRecord and the five GuardRuns the relay fills for the receipt.

Issue 12's throughput goal (the defaults at >= 0.5x the bare relay's calls per second, both
CPU-bound on one interpreter lock) leaves the guards and receipts together at most the bare
relay's own CPU per call (`benchmarks/relay.py`, the "relay + tool_filter" row); the sum printed
last is what these pieces alone cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.record import DecisionRecord
from mcpward.evidence.recorder import open_ledger
from mcpward.evidence.settings import EvidenceSettings
from mcpward.guards.response_injection import ResponseInjectionGuard, ResponseInjectionOptions
from mcpward.guards.secrets import SecretsGuard, SecretsOptions
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.executor import GuardRun
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject

ARGUMENTS = {"message": "hello"}
RESULT = {"content": [{"type": "text", "text": json.dumps(ARGUMENTS)}], "isError": False}
TOOL = {"name": "echo", "description": "Echo the arguments.", "inputSchema": {"type": "object"}}
CONTRACT = "sha256:" + "a" * 64
BATCH = 16
# The default guards that run at a tools/call with one upstream, in order, with their phases.
RUNS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("access", "tool_invoke", {}),
    ("rug_pull", "tool_invoke", {"contract_hash": CONTRACT}),
    ("tool_poisoning", "tool_invoke", {}),
    ("secrets", "tool_result", {}),
    ("response_injection", "tool_result", {}),
)


def echo_record() -> DecisionRecord:
    """What the relay hands the recorder for one allowed echo call."""
    runs = [GuardRun(g, g, phase, "allow", 0.012, evidence=dict(ev)) for g, phase, ev in RUNS]
    return DecisionRecord(
        time.time(),
        "tools/call",
        "bench",
        "echo",
        "allow",
        session_id="session-1",
        era="handshake",
        arguments=ARGUMENTS,
        result=RESULT,
        tool_definition=TOOL,
        contract_hash=CONTRACT,
        runs=runs,
        gateway_ms=0.5,
        upstream_ms=0.2,
    )


def finish(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never awaits (the content guards' hooks) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the hook awaited")


def cpu_us_per_call(work: Callable[[int], None], calls: int) -> float:
    started = time.thread_time()
    work(calls)
    return (time.thread_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    context = GuardContext(server_name="bench", method="tools/call")
    secrets = SecretsGuard(GuardSpec(kind="secrets", runs_on=[Phase.TOOL_RESULT]), SecretsOptions())
    injection = ResponseInjectionGuard(
        GuardSpec(kind="response_injection", runs_on=[Phase.TOOL_RESULT]),
        ResponseInjectionOptions(),
    )
    with tempfile.TemporaryDirectory() as tmp:
        ledger = open_ledger(EvidenceSettings(), Path(tmp))
        record = echo_record()
        batch = [PendingEntry.of_receipt(build_receipt(echo_record()), time.time())] * BATCH

        def build(calls: int) -> None:
            for _ in range(calls):
                build_receipt(record)

        def commit(calls: int) -> None:
            for _ in range(calls // BATCH):
                ledger.append(batch)

        def judge_secrets(calls: int) -> None:
            for _ in range(calls):
                finish(secrets.on_tool_result(Subject(Phase.TOOL_RESULT, "echo", RESULT), context))

        def judge_injection(calls: int) -> None:
            for _ in range(calls):
                subject = Subject(Phase.TOOL_RESULT, "echo", RESULT)
                finish(injection.on_tool_result(subject, context))

        def fill_record(calls: int) -> None:
            for _ in range(calls):
                echo_record()

        pieces = {
            "receipt built from its record": build,
            f"sealed and committed, {BATCH} a transaction": commit,
            "secrets on the result": judge_secrets,
            "response_injection on the result": judge_injection,
            "DecisionRecord and five GuardRuns": fill_record,
        }
        for work in pieces.values():
            work(BATCH * 30)  # warm-up: RE2's DFA states, SQLite's page cache
        rounds: dict[str, list[float]] = {name: [] for name in pieces}
        for _ in range(args.rounds):  # interleaved, to spread machine noise over every piece
            for name, work in pieces.items():
                rounds[name].append(cpu_us_per_call(work, args.calls))
        ledger.close()
    width = max(len(name) for name in pieces) + 2
    print(f"thread CPU µs per call, median of {args.rounds} rounds of {args.calls} (min-max):")
    total = 0.0
    for name, values in rounds.items():
        median = statistics.median(values)
        total += median
        print(f"  {name:{width}}{median:8.1f}  ({min(values):.1f}-{max(values):.1f})")
    print(f"  {'sum':{width}}{total:8.1f}")


if __name__ == "__main__":
    main()
