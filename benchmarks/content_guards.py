"""Benchmark: all content guards on a tool result (4 KiB, goal <= 0.2 ms; 1 MiB, goal <= 10 ms),
plus the adversarial inputs (10 MiB, deep nesting) and tool_poisoning on a real tools/list.

Run: .venv/bin/python benchmarks/content_guards.py [--repeat N]. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import string
import time
from pathlib import Path
from typing import Any

from mcpward.guards.kinds import resolve_guard_kind
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.executor import Pipeline
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec

ROOT = Path(__file__).resolve().parent.parent


def guard(kind: str, phases: list[Phase], **options: Any) -> Any:
    cls = resolve_guard_kind(kind)
    return cls(GuardSpec(kind=kind, runs_on=phases), cls.Options(**options))


def prose(size: int, seed: int = 7) -> str:
    """Tool-output-like text: words, numbers, paths, JSON-ish key/values, some URLs."""
    rnd = random.Random(seed)
    words = ["the", "result", "file", "status", "ok", "user", "id", "value", "count", "error",
             "path", "/srv/app/data.csv", "https://example.com/a/b", "name:", "total=42",
             "2026-11-22", "commit", "3b335d61", "items", "returned", "in", "page", "of",
             "results."]  # fmt: skip
    out: list[str] = []
    length = 0
    while length < size:
        word = (
            rnd.choice(words)
            if rnd.random() < 0.9
            else "".join(rnd.choices(string.ascii_lowercase, k=7))
        )
        out.append(word)
        length += len(word) + 1
        if rnd.random() < 0.05:
            out.append("\n")
    return " ".join(out)[:size]


def tool_result(size: int) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": prose(size)}], "isError": False}


def timed(pipeline: Pipeline, phase: Phase, payload: Any, repeat: int) -> list[float]:
    ctx = GuardContext(server_name="bench", method="tools/call")
    loop = asyncio.new_event_loop()
    try:
        for _ in range(min(5, repeat)):
            loop.run_until_complete(pipeline.run([phase], "t", payload, ctx))
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            loop.run_until_complete(pipeline.run([phase], "t", payload, ctx))
            samples.append((time.perf_counter() - start) * 1000.0)
        return samples
    finally:
        loop.close()


def report(label: str, samples: list[float], goal_ms: float | None) -> None:
    median = statistics.median(samples)
    p95 = sorted(samples)[max(0, int(len(samples) * 0.95) - 1)]
    verdict = (
        ""
        if goal_ms is None
        else f"  (goal <= {goal_ms:g} ms: {'met' if median <= goal_ms else 'NOT met'})"
    )
    print(f"{label:<58} median {median:9.3f} ms   p95 {p95:9.3f} ms{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    results = Pipeline(
        [guard("secrets", [Phase.TOOL_RESULT]), guard("response_injection", [Phase.TOOL_RESULT])]
    )
    scan_only = Pipeline([guard("response_injection", [Phase.TOOL_RESULT])])
    secrets_only = Pipeline([guard("secrets", [Phase.TOOL_RESULT])])
    print("content guards on tools/call results (secrets + response_injection, via the executor)")
    report(
        "4 KiB result, both guards",
        timed(results, Phase.TOOL_RESULT, tool_result(4096), args.repeat),
        0.2,
    )
    report(
        "4 KiB result, secrets only",
        timed(secrets_only, Phase.TOOL_RESULT, tool_result(4096), args.repeat),
        None,
    )
    report(
        "4 KiB result, response_injection only",
        timed(scan_only, Phase.TOOL_RESULT, tool_result(4096), args.repeat),
        None,
    )
    reads_all = Pipeline(
        [
            guard("secrets", [Phase.TOOL_RESULT]),
            guard("response_injection", [Phase.TOOL_RESULT], learned_reads="all"),
        ]
    )
    report(
        "4 KiB result, both guards, learned_reads: all (opt-in)",
        timed(reads_all, Phase.TOOL_RESULT, tool_result(4096), args.repeat),
        None,
    )
    pieces = {"content": [{"type": "text", "text": prose(16384, seed)} for seed in range(64)]}
    report(
        "64 strings of 16 KiB, both guards, learned_reads: all",
        timed(reads_all, Phase.TOOL_RESULT, pieces, max(10, args.repeat // 10)),
        None,
    )
    big = tool_result(1 << 20)
    report(
        "1 MiB result, both guards",
        timed(results, Phase.TOOL_RESULT, big, max(10, args.repeat // 10)),
        10.0,
    )
    without_gitleaks = Pipeline(
        [
            guard("secrets", [Phase.TOOL_RESULT], gitleaks=False),
            guard("response_injection", [Phase.TOOL_RESULT]),
        ]
    )
    report(
        "1 MiB result, both guards, secrets without gitleaks rules",
        timed(without_gitleaks, Phase.TOOL_RESULT, big, max(10, args.repeat // 10)),
        None,
    )
    huge = tool_result(10 << 20)
    report(
        "10 MiB result (adversarial size), both guards",
        timed(results, Phase.TOOL_RESULT, huge, 5),
        None,
    )
    node: dict[str, Any] = {"leaf": "x"}
    for _ in range(60):
        node = {"child": node}
    deep = {"content": [{"type": "text", "text": "ok"}], "structuredContent": node}
    report(
        "structuredContent nested 60 deep, both guards",
        timed(results, Phase.TOOL_RESULT, deep, args.repeat),
        None,
    )
    evil = {"content": [{"type": "text", "text": "a" * (1 << 20) + "!"}]}
    report(
        "1 MiB of 'aaaa…!' (backtracking bait), both guards",
        timed(results, Phase.TOOL_RESULT, evil, 10),
        None,
    )
    poisoning = Pipeline(
        [guard("tool_poisoning", [Phase.TOOLS_LIST]), guard("tool_shadowing", [Phase.TOOLS_LIST])]
    )
    tools = json.loads((ROOT / "tests/data/real_servers/mongodb-mcp-server.json").read_text())[
        "tools"
    ]
    size = len(json.dumps(tools))
    report(
        f"tools/list of mongodb-mcp-server ({len(tools)} tools, {size // 1024} KiB)",
        timed(poisoning, Phase.TOOLS_LIST, tools, max(10, args.repeat // 10)),
        None,
    )


if __name__ == "__main__":
    main()
