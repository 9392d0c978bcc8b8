"""Benchmark the contract gate: the per-call pin check on the unchanged path (goal <= 20 us) and
re-validating a 1,000-tool list (goal <= 50 ms). Prints numbers; asserts nothing.

Run: .venv/bin/python benchmarks/pins.py
"""

from __future__ import annotations

import asyncio
import copy
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpward.contracts.extract import snapshot_contracts
from mcpward.contracts.gate import Gate
from mcpward.contracts.holds import Commands
from mcpward.contracts.model import ItemKind
from mcpward.contracts.postures import PostureTable
from mcpward.guards.rug_pull import RugPullGuard, RugPullOptions
from mcpward.pipeline import Allow, Guard, GuardContext, GuardSpec, Phase
from mcpward.pipeline.executor import Pipeline
from mcpward.pipeline.services import GatewayServices, SnapshotListener, UpstreamSnapshot
from mcpward.pipeline.subject import Subject
from mcpward.store.pins_sqlite import SqlitePinStore

ALL = tuple(ItemKind)


def tool(i: int) -> dict[str, Any]:
    """A realistic tool: a paragraph of description, five typed parameters, hints."""
    return {
        "name": f"tool_{i:04d}",
        "title": f"Tool {i}",
        "description": f"Tool number {i}. "
        + "Reads records from the service and returns them. " * 6,
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for", "maxLength": 200},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "mode": {"type": "string", "enum": ["fast", "full", "draft"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "options": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


def per_op(fn: Callable[[], Any], n: int) -> float:
    """Median of 5 runs, seconds per operation."""
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n)
    return statistics.median(runs)


async def per_op_async(fn: Callable[[], Any], n: int) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            await fn()
        runs.append((time.perf_counter() - start) / n)
    return statistics.median(runs)


class StaticCatalog:
    def __init__(self, snap: UpstreamSnapshot) -> None:
        self.snap = snap

    def upstream_ids(self) -> list[str]:
        return [self.snap.upstream]

    def snapshot(self, upstream: str) -> UpstreamSnapshot | None:
        return self.snap

    async def refresh(self, upstream: str) -> UpstreamSnapshot | None:
        return self.snap

    def subscribe(self, listener: SnapshotListener) -> None:
        pass


class AllowAll(Guard):
    kind = "bench_allow"

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Allow:
        return Allow()


async def main() -> None:
    logging.disable(logging.WARNING)  # the ten hold banners are not the point here
    tools = [tool(i) for i in range(1000)]
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        gate = Gate(SqlitePinStore(state), lambda _u: PostureTable(), Commands())
        contracts = snapshot_contracts(tools=tools, prompts=[], resources=[], resource_templates=[])

        start = time.perf_counter()
        gate.observe("up", contracts, ALL, 1.0)
        baseline_ms = (time.perf_counter() - start) * 1000

        # re-validation of an unchanged 1,000-tool list: fresh dict objects each time, as a
        # re-list parses a new response
        copies = [snapshot_contracts(tools=copy.deepcopy(tools)) for _ in range(6)]
        timings = []
        for view in copies:
            start = time.perf_counter()
            gate.observe("up", view, ALL, 2.0)
            timings.append(time.perf_counter() - start)
        relist = statistics.median(timings)

        # after a restart: load and verify 1,000 pins, then judge the first unchanged re-list
        relisted = snapshot_contracts(tools=copy.deepcopy(tools))
        start = time.perf_counter()
        restarted = Gate(SqlitePinStore(state), lambda _u: PostureTable(), Commands())
        restarted.observe("up", relisted, ALL, 3.0)
        restart = time.perf_counter() - start

        # a list whose bytes the gate has never seen (1,000 new tools: the canonical form of each)
        fresh_tools = [{**t, "name": t["name"] + "_x"} for t in tools]
        start = time.perf_counter()
        for t in fresh_tools:
            restarted.hashes.hash(t)
        cold = time.perf_counter() - start

        # ten of the thousand drifted (classification + hold records written)
        drifted = copy.deepcopy(tools)
        for t in drifted[:10]:
            t["inputSchema"]["required"].append("mode")
        drifted_view = snapshot_contracts(tools=drifted)
        start = time.perf_counter()
        obs = gate.observe("up", drifted_view, ALL, 4.0)
        drift_ms = (time.perf_counter() - start) * 1000
        assert len(obs.new_holds) == 10

        # per-call check on the unchanged path
        check = per_op(lambda: gate.check("up", ItemKind.TOOL, "tool_0500"), 200_000)

        snap = UpstreamSnapshot(
            "up", tools=tools, server_info={"name": "bench"}, fetched_at=time.monotonic()
        )
        guard_state = state / "guard"
        guard_state.mkdir()
        spec = GuardSpec(kind="rug_pull", runs_on=[Phase.TOOL_INVOKE])
        guard = RugPullGuard(spec, RugPullOptions())
        await guard.attach(GatewayServices(state_dir=guard_state, catalog=StaticCatalog(snap)))
        ctx = GuardContext(server_name="up", method="tools/call")
        subject = Subject(Phase.TOOL_INVOKE, "tool_0500", {"query": "x"})
        hook = await per_op_async(lambda: guard.on_tool_invoke(subject, ctx), 100_000)
        bare = AllowAll(GuardSpec(kind="bench_allow", runs_on=[Phase.TOOL_INVOKE]), None)
        hook_bare = await per_op_async(lambda: bare.on_tool_invoke(subject, ctx), 100_000)
        with_guard = Pipeline([guard])
        without = Pipeline([bare])
        pipe = await per_op_async(
            lambda: with_guard.run([Phase.TOOL_INVOKE], "tool_0500", {"query": "x"}, ctx), 20_000
        )
        pipe_bare = await per_op_async(
            lambda: without.run([Phase.TOOL_INVOKE], "tool_0500", {"query": "x"}, ctx), 20_000
        )
        await guard.close()

    rows = [
        ("first sight: pin 1,000 tools (hash + one SQLite transaction)", baseline_ms, "ms", ""),
        ("re-validate unchanged 1,000-tool list (warm)", relist * 1000, "ms", "goal <= 50 ms"),
        ("after a restart: load 1,000 pins + judge the first re-list", restart * 1000, "ms", ""),
        ("canonical hashes of 1,000 never-seen tools (cold)", cold * 1000, "ms", ""),
        ("re-list with 10 of 1,000 drifted (classify + 10 holds)", drift_ms, "ms", ""),
        ("per-call pin check, unchanged (Gate.check)", check * 1e6, "us", "goal <= 20 us"),
        ("per-call rug_pull hook, unchanged read-only tool", hook * 1e6, "us", ""),
        (
            "  a bare Allow hook, for comparison",
            hook_bare * 1e6,
            "us",
            f"ratio {hook / hook_bare:.1f}x",
        ),
        ("pipeline.run with rug_pull", pipe * 1e6, "us", ""),
        ("pipeline.run with a bare Allow guard instead", pipe_bare * 1e6, "us", ""),
    ]
    print("contract gate benchmark (1,000 tools; medians of 5 runs)")
    for label, value, unit, note in rows:
        print(f"  {label:<62} {value:9.2f} {unit}  {note}")


if __name__ == "__main__":
    asyncio.run(main())
