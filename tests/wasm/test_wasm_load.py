"""Loading a guard: SHA-256 pinning, the contract check, the import allow-list, the code cache."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from wasmtime.component import ComponentInstanceType

from mcpward.config.loader import ConfigError, parse_config
from mcpward.guards.wasm.cache import CompiledCache
from mcpward.guards.wasm.contract import (
    GUARD_FUNCS,
    HOST_FUNCS,
    check_component,
    describe_func,
    interface_funcs,
)
from mcpward.guards.wasm.engine import shared_runtime
from mcpward.guards.wasm.errors import WasmGuardLoadError
from mcpward.guards.wasm.loader import compile_component, load_module
from tests.wasm import building


def config_with(module: Path, sha256: str, **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "upstreams": [{"id": "up", "command": "true"}],
        "guards": [
            {
                "kind": "wasm",
                "runs_on": ["tool_invoke"],
                "config": {"module_path": str(module), "sha256": sha256, **extra},
            }
        ],
    }


def test_config_with_the_right_hash_loads(fixture_wasm: Path) -> None:
    loaded = parse_config(config_with(fixture_wasm, building.sha256_of(fixture_wasm)))
    assert loaded.guard_specs[-1].kind == "wasm"  # after the built-in defaults


def test_config_with_another_hash_is_refused(fixture_wasm: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(config_with(fixture_wasm, "0" * 64))
    text = str(info.value)
    assert (
        "guards[0].config" in text
        and building.sha256_of(fixture_wasm) in text
        and "mcpward guard check" in text
    )


def test_config_with_a_missing_module_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        parse_config(config_with(tmp_path / "absent.wasm", "0" * 64))


def test_module_swapped_after_config_load_is_refused_at_load(
    fixture_wasm: Path, probe_wasm: Path, tmp_path: Path
) -> None:
    module = tmp_path / "guard.wasm"
    shutil.copy(fixture_wasm, module)
    pinned = building.sha256_of(module)
    shutil.copy(probe_wasm, module)  # replaced between validation and load
    with pytest.raises(WasmGuardLoadError, match="but the config pins"):
        load_module(shared_runtime(), module, pinned, allow_wasi=True, cache=None)


def test_the_fixture_keeps_the_contract(fixture_wasm: Path) -> None:
    runtime = shared_runtime()
    component = compile_component(runtime, "fixture", fixture_wasm.read_bytes())
    report = check_component(component, runtime.engine, "fixture", allow_wasi=False)
    assert report.host_imports == ("get-config", "log", "record-metric")
    assert not report.needs_wasi and report.extra_exports == ()


def test_contract_signatures_match_the_shipped_wit(wasm_build_dir: Path) -> None:
    # A component generated from the WIT alone (wasm-tools --dummy) must describe exactly as the
    # contract table says, so the table and guard.wit cannot drift apart.
    out = wasm_build_dir / "dummy.wasm"
    building._run(
        [
            building.wasm_tools(),
            "component",
            "embed",
            building.WIT_DIR,
            "--world",
            "security-guard",
            "--dummy",
            "-o",
            out.with_suffix(".embed.wasm"),
        ]
    )
    building._run(
        [building.wasm_tools(), "component", "new", out.with_suffix(".embed.wasm"), "-o", out]
    )
    runtime = shared_runtime()
    component = compile_component(runtime, "dummy", out.read_bytes())
    ctype = component.type
    guard = ctype.exports(runtime.engine)["mcp:security-guard/guard@0.1.0"].ty
    host = ctype.imports(runtime.engine)["mcp:security-guard/host@0.1.0"].ty
    assert isinstance(guard, ComponentInstanceType) and isinstance(host, ComponentInstanceType)
    funcs = {n: describe_func(f) for n, f in interface_funcs(guard, runtime.engine).items()}
    assert funcs == GUARD_FUNCS
    imported = {n: describe_func(f) for n, f in interface_funcs(host, runtime.engine).items()}
    assert imported == HOST_FUNCS


def test_a_changed_record_field_is_refused(tmp_path: Path, wasm_build_dir: Path) -> None:
    wit = tmp_path / "wit"
    wit.mkdir()
    text = (
        (building.WIT_DIR / "guard.wit")
        .read_text()
        .replace("input-schema: string", "schema: string")
    )
    (wit / "guard.wit").write_text(text)
    module = building.build_wat_component(building.GUESTS / "fixture.wat", tmp_path / "build", wit)
    runtime = shared_runtime()
    component = compile_component(runtime, "changed", module.read_bytes())
    with pytest.raises(WasmGuardLoadError, match="evaluate-tools-list has the signature"):
        check_component(component, runtime.engine, "changed", allow_wasi=False)


def test_a_core_module_is_refused_with_a_hint(wasm_build_dir: Path) -> None:
    core = building.build_core_module(building.GUESTS / "fixture.wat", wasm_build_dir)
    with pytest.raises(WasmGuardLoadError, match="wasm-tools component new"):
        compile_component(shared_runtime(), "core", core.read_bytes())


def test_not_webassembly_is_refused() -> None:
    with pytest.raises(WasmGuardLoadError, match="not a WebAssembly binary"):
        compile_component(shared_runtime(), "text", b"#!/bin/sh\n")


def test_wasi_imports_need_needs_wasi(probe_wasm: Path) -> None:
    with pytest.raises(WasmGuardLoadError, match="set needs_wasi: true"):
        load_module(
            shared_runtime(),
            probe_wasm,
            building.sha256_of(probe_wasm),
            allow_wasi=False,
            cache=None,
        )
    module = load_module(
        shared_runtime(), probe_wasm, building.sha256_of(probe_wasm), allow_wasi=True, cache=None
    )
    assert "wasi:filesystem/preopens@0.2.9" in module.contract.wasi_imports


def test_compiled_code_is_cached_and_a_tampered_cache_is_not_used(
    fixture_wasm: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = shared_runtime()
    sha = building.sha256_of(fixture_wasm)
    cache = CompiledCache(tmp_path, runtime.cache_tag)
    first = load_module(runtime, fixture_wasm, sha, allow_wasi=False, cache=cache)
    second = load_module(
        runtime,
        fixture_wasm,
        sha,
        allow_wasi=False,
        cache=CompiledCache(tmp_path, runtime.cache_tag),
    )
    assert not first.from_cache and second.from_cache
    cached = cache.path_for(sha)
    assert cached.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "wasm-cache" / "cache.key").stat().st_mode & 0o777 == 0o600
    data = bytearray(cached.read_bytes())
    data[-100] ^= 0xFF
    cached.write_bytes(bytes(data))
    third = load_module(runtime, fixture_wasm, sha, allow_wasi=False, cache=cache)
    assert not third.from_cache
    assert any("MAC does not verify" in r.getMessage() for r in caplog.records)
    assert load_module(
        runtime, fixture_wasm, sha, allow_wasi=False, cache=cache
    ).from_cache  # rewritten


async def test_instantiation_over_the_memory_limit_is_refused_at_attach(
    make_wasm_guard: Any, python_example_wasm: Path
) -> None:
    # CPython in wasm needs ~12 MiB at instantiation; 4 MiB cannot even start it.
    with pytest.raises(WasmGuardLoadError, match="raise memory_limit_mb"):
        await make_wasm_guard(python_example_wasm, needs_wasi=True, memory_limit_mb=4)
