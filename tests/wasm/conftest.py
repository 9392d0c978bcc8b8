"""WASM guard fixtures: components built offline once per session, a shared compiled-code cache.

Builds and compiled code live in pytest's cache dir when it is available, so a re-run skips the
slow componentize-py build and JIT compile; a fresh checkout builds everything from source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpward.guards.wasm.cache import CompiledCache
from mcpward.guards.wasm.engine import shared_runtime
from mcpward.guards.wasm.guard import WasmGuard, WasmGuardOptions
from mcpward.guards.wasm.loader import load_module
from mcpward.pipeline.services import GatewayServices
from mcpward.pipeline.spec import GuardSpec
from tests.wasm import building
from tests.wasm.hook_server import HookServer, running_hook_server
from tests.wasm.services import NoCatalog


@pytest.fixture(scope="session")
def wasm_build_dir(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("mcpward-wasm-builds"))
    return tmp_path_factory.mktemp("wasm-builds")


@pytest.fixture(scope="session")
def wasm_state_dir(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A state dir whose compiled-code cache outlives the session (keyed by hash + runtime)."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("mcpward-wasm-state"))
    return tmp_path_factory.mktemp("wasm-state")


@pytest.fixture(scope="session")
def fixture_wasm(wasm_build_dir: Path) -> Path:
    return building.build_wat_component(building.GUESTS / "fixture.wat", wasm_build_dir)


@pytest.fixture(scope="session")
def probe_wasm(wasm_build_dir: Path) -> Path:
    wit = building.assembled_wit(wasm_build_dir, building.GUESTS / "probe-wit")
    return building.build_wat_component(building.GUESTS / "probe.wat", wasm_build_dir, wit, "probe")


@pytest.fixture(scope="session")
def wat_example_wasm(wasm_build_dir: Path) -> Path:
    return building.build_wat_component(
        building.EXAMPLES / "wat-tool-blocklist" / "guard.wat", wasm_build_dir
    )


@pytest.fixture(scope="session")
def python_example_wasm(wasm_build_dir: Path, wasm_state_dir: Path) -> Path:
    """Built, and compiled into the shared state dir's cache: a gateway started on that state dir
    then loads it in well under a second instead of compiling it (10-60 s) before it answers."""
    module = building.build_python_component(
        building.EXAMPLES / "python-pattern-guard", wasm_build_dir
    )
    runtime = shared_runtime()
    cache = CompiledCache(wasm_state_dir, runtime.cache_tag)
    load_module(runtime, module, building.sha256_of(module), allow_wasi=True, cache=cache)
    return module


GuardFactory = Callable[..., Any]


@pytest.fixture
async def make_wasm_guard(wasm_state_dir: Path) -> Any:
    """`await make_wasm_guard(module, runs_on=..., timeout_ms=..., metrics=..., **config)`."""
    made: list[WasmGuard] = []

    async def make(
        module: Path,
        *,
        runs_on: list[str] | None = None,
        timeout_ms: int = 1000,
        failure_mode: str = "fail_closed",
        guard_id: str = "wg",
        state_dir: Path | None = None,
        attach: bool = True,
        metrics: Any = None,
        **config: Any,
    ) -> WasmGuard:
        spec = GuardSpec.model_validate(
            {
                "kind": "wasm",
                "id": guard_id,
                "runs_on": runs_on or sorted(p.value for p in WasmGuard.supported_phases()),
                "timeout_ms": timeout_ms,
                "failure_mode": failure_mode,
                "config": {
                    "module_path": str(module),
                    "sha256": building.sha256_of(module),
                    **config,
                },
            }
        )
        options = WasmGuardOptions.model_validate(spec.config)
        guard = WasmGuard(spec, options, metrics=metrics)
        made.append(guard)
        if attach:
            await guard.attach(
                GatewayServices(state_dir=state_dir or wasm_state_dir, catalog=NoCatalog())
            )
        return guard

    yield make
    for guard in made:
        await guard.close()


@pytest.fixture
def hook_server() -> Iterator[HookServer]:
    """A policy hook on 127.0.0.1 that verifies the gateway's signature and answers as queued."""
    with running_hook_server() as server:
        yield server
