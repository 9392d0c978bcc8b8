"""WASM guard benchmark: per-call overhead of a trivial guard (warm), load costs, deadline stops.

Run: .venv/bin/python benchmarks/wasm_guard.py [--calls 3000] [--python]
Builds the test fixture guard (and, with --python, the componentize-py example) offline, then prints
p50/p90/p99 of one tool_invoke decision through the pipeline with and without the guard, the cold
JIT compile and load-from-cache times, and how long a spinning guard runs past its deadline.
Runs on uvloop, as `mcpward run` does. Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.wasm import building  # noqa: E402
from tests.wasm.services import services  # noqa: E402

from mcpward.guards.wasm.cache import CompiledCache  # noqa: E402
from mcpward.guards.wasm.engine import shared_runtime  # noqa: E402
from mcpward.guards.wasm.errors import WasmCallError  # noqa: E402
from mcpward.guards.wasm.guard import WasmGuard, WasmGuardOptions  # noqa: E402
from mcpward.guards.wasm.loader import compile_component, load_module  # noqa: E402
from mcpward.guards.wasm.values import ContextArg  # noqa: E402
from mcpward.pipeline import GuardContext, GuardSpec, Phase  # noqa: E402
from mcpward.pipeline.executor import Pipeline  # noqa: E402

ARGS = {"path": "/srv/data/report.csv", "limit": 100}


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def show(label: str, samples_s: list[float]) -> None:
    ms = [s * 1000.0 for s in samples_s]
    print(
        f"  {label:<44} p50 {pct(ms, 0.5):7.3f} ms   p90 {pct(ms, 0.9):7.3f} ms   "
        f"p99 {pct(ms, 0.99):7.3f} ms   mean {statistics.fmean(ms):7.3f} ms"
    )


async def make_guard(module: Path, state: Path, **config: Any) -> WasmGuard:
    spec = GuardSpec(
        kind="wasm",
        id="bench",
        runs_on=[Phase.TOOL_INVOKE],
        timeout_ms=config.pop("timeout_ms", 1000),
        config={"module_path": str(module), "sha256": building.sha256_of(module), **config},
    )
    guard = WasmGuard(spec, WasmGuardOptions.model_validate(spec.config))
    await guard.attach(services(state))
    return guard


async def timed_pipeline(pipeline: Pipeline, calls: int) -> list[float]:
    ctx = GuardContext(server_name="files", method="tools/call")
    for _ in range(200):  # warm-up
        await pipeline.run((Phase.TOOL_INVOKE,), "read_file", dict(ARGS), ctx)
    gc.collect()
    gc.freeze()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await pipeline.run((Phase.TOOL_INVOKE,), "read_file", dict(ARGS), ctx)
        samples.append(time.perf_counter() - t0)
    gc.unfreeze()
    return samples


def guest_calls(guard: WasmGuard, calls: int) -> list[float]:
    """The sandbox call on this thread: argument passing, the guest, the answer; no executor."""
    assert guard.sandbox is not None
    ctx = guard._context(GuardContext(server_name="files", method="tools/call"))
    call_args: list[Any] = ["read_file", '{"path":"/srv/data/report.csv","limit":100}', ctx]
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        guard.sandbox.call("evaluate-tool-call", call_args, 1.0)
        samples.append(time.perf_counter() - t0)
    return samples


def load_costs(label: str, module: Path, state: Path, wasi: bool) -> None:
    runtime = shared_runtime()
    data = module.read_bytes()
    t0 = time.perf_counter()
    compile_component(runtime, label, data)
    cold = time.perf_counter() - t0
    sha = building.sha256_of(module)
    cache = CompiledCache(state, runtime.cache_tag)
    load_module(runtime, module, sha, wasi, cache)  # writes the cache
    cached = []
    for _ in range(5):
        t0 = time.perf_counter()
        loaded = load_module(runtime, module, sha, wasi, cache)
        cached.append(time.perf_counter() - t0)
        assert loaded.from_cache
    print(
        f"  {label:<16} {len(data) / 1024:9.0f} KiB   cold compile {cold * 1000:9.1f} ms   "
        f"load from cache (hash, MAC, deserialize, contract) "
        f"{statistics.median(cached) * 1000:7.1f} ms"
    )


async def deadline_stops(module: Path, state: Path) -> None:
    guard = await make_guard(module, state, fuel=10**13, timeout_ms=100)
    assert guard.sandbox is not None
    ctx = ContextArg("files", None, "{}")
    for timeout_ms in (50, 100, 500):
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            with contextlib.suppress(WasmCallError):
                guard.sandbox.call("evaluate-tool-call", ["spin", "{}", ctx], timeout_ms / 1000.0)
            runs.append((time.perf_counter() - t0) * 1000.0)
        print(
            f"  spin with timeout {timeout_ms:>3} ms stopped after "
            + ", ".join(f"{r:.1f}" for r in runs)
            + " ms (epoch tick 5 ms)"
        )
    await guard.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--python", action="store_true", help="also the componentize-py example")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fixture = building.build_wat_component(building.GUESTS / "fixture.wat", work / "build")
        print(f"wasmtime {shared_runtime().version}; {args.calls} calls per row")

        print("\nper-call cost of one tool_invoke decision (pipeline.run, warm instance):")
        empty = await timed_pipeline(Pipeline([]), args.calls)
        show("no guards", empty)
        guard = await make_guard(fixture, work / "state")
        with_guard = await timed_pipeline(Pipeline([guard]), args.calls)
        show("trivial WAT guard (allow)", with_guard)
        overhead = pct(with_guard, 0.5) - pct(empty, 0.5)
        print(f"  => WAT guard overhead p50 {overhead * 1000:.3f} ms (goal <= 0.3 ms)")
        show("  of which the guest call alone (no thread hop)", guest_calls(guard, args.calls))
        await guard.close()

        if args.python:
            example = building.build_python_component(
                building.EXAMPLES / "python-pattern-guard", work / "build"
            )
            pyguard = await make_guard(
                example, work / "state", needs_wasi=True, wasm_config={"blocked_patterns": ["x"]}
            )
            with_py = await timed_pipeline(Pipeline([pyguard]), args.calls)
            show("python-pattern-guard (allow)", with_py)
            py_overhead = pct(with_py, 0.5) - pct(empty, 0.5)
            print(f"  => Python guard overhead p50 {py_overhead * 1e3:.3f} ms")
            await pyguard.close()

        print("\nload costs:")
        load_costs("WAT fixture", fixture, work / "state-load", False)
        if args.python:
            load_costs("Python example", example, work / "state-load", True)

        print("\nwall-clock deadline (epoch interruption) on an infinite loop:")
        await deadline_stops(fixture, work / "state")


if __name__ == "__main__":
    import uvloop  # the gateway's own event loop (mcpward run)

    uvloop.run(main())
