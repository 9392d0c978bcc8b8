"""What a guard that links WASI can reach: no directory, no socket, a frozen clock that cannot wait.

The probe (guests/probe.wat) really calls WASI; the positive control grants a directory through a
test-only WasiConfig factory and shows the probe would see it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wasmtime import WasiConfig

from mcpward.guards.wasm.sandbox import GuardSandbox
from mcpward.pipeline import Deny, GuardContext, Phase
from mcpward.pipeline.executor import Outcome, Pipeline


async def probe(guard: Any, what: str) -> Outcome:
    ctx = GuardContext(server_name="up", method="tools/call")
    return await Pipeline([guard]).run((Phase.TOOL_INVOKE,), what, {}, ctx)


async def test_no_directory_is_visible(make_wasm_guard: Any, probe_wasm: Path) -> None:
    guard = await make_wasm_guard(probe_wasm, needs_wasi=True)
    out = await probe(guard, "fs")
    assert isinstance(out.stop, Deny) and out.stop.code == "fs_none"


async def test_the_probe_sees_a_granted_directory(
    make_wasm_guard: Any, probe_wasm: Path, tmp_path: Path
) -> None:
    # Positive control: the same probe with a preopened directory reports it.
    guard = await make_wasm_guard(probe_wasm, needs_wasi=True)
    granted = tmp_path / "granted"
    granted.mkdir()

    def with_dir() -> WasiConfig:
        config = WasiConfig()
        config.preopen_dir(str(granted), "/granted")
        return config

    sandbox = guard.sandbox
    guard.sandbox = GuardSandbox(
        guard.id, sandbox._runtime, sandbox.module, sandbox._host, sandbox.limits, with_dir
    )
    out = await probe(guard, "fs")
    assert isinstance(out.stop, Deny) and out.stop.code == "fs_visible"


async def test_sockets_are_denied(make_wasm_guard: Any, probe_wasm: Path) -> None:
    guard = await make_wasm_guard(probe_wasm, needs_wasi=True)
    out = await probe(guard, "net")
    assert isinstance(out.stop, Deny) and out.stop.code == "socket_denied"


async def test_the_clock_is_frozen_and_cannot_wait(make_wasm_guard: Any, probe_wasm: Path) -> None:
    guard = await make_wasm_guard(probe_wasm, needs_wasi=True)
    out = await probe(guard, "clock")
    assert isinstance(out.stop, Deny) and out.stop.code == "clock_frozen"
    waited = await probe(guard, "wait")
    assert waited.stop is not None and waited.stop.code == "guard_error"
    assert guard.sandbox.instances_discarded == 1
    assert (await probe(guard, "other")).allowed
