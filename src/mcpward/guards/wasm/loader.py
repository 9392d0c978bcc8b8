"""Loading a guard module: read once, check the SHA-256 pin, compile or reuse, check the contract.

The bytes that were hashed are the bytes that get compiled; a module whose hash differs is refused.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from wasmtime import WasmtimeError
from wasmtime.component import Component

from mcpward.guards.wasm.cache import CompiledCache
from mcpward.guards.wasm.contract import ContractReport, check_component
from mcpward.guards.wasm.engine import WasmRuntime
from mcpward.guards.wasm.errors import WasmGuardLoadError

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
MAX_MODULE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class LoadedModule:
    path: Path
    sha256: str
    size: int
    component: Component
    contract: ContractReport
    from_cache: bool
    load_ms: float


def read_module(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_MODULE_BYTES:
            raise WasmGuardLoadError(
                str(path), f"is {size} bytes, over the {MAX_MODULE_BYTES} byte limit"
            )
        return path.read_bytes()
    except OSError as exc:
        raise WasmGuardLoadError(str(path), f"cannot be read: {exc.strerror}") from None


def check_pin(module: str, data: bytes, pinned: str) -> str:
    """The module's SHA-256 (hex); WasmGuardLoadError if it is not the pinned one."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != pinned.lower():
        raise WasmGuardLoadError(
            module,
            f"its SHA-256 is {actual}, but the config pins {pinned.lower()}",
            "if you trust this build, check it with `mcpward guard check` and pin its hash",
        )
    return actual


def compile_component(runtime: WasmRuntime, module: str, data: bytes) -> Component:
    if not data.startswith(b"\0asm"):
        raise WasmGuardLoadError(module, "is not a WebAssembly binary")
    try:
        return Component(runtime.engine, data)
    except WasmtimeError as exc:
        first = str(exc).strip().splitlines()[0]
        hint = ""
        if data[4:8] == b"\x01\0\0\0":
            hint = "it is a core module; turn it into a component with `wasm-tools component new`"
        raise WasmGuardLoadError(module, f"is not a valid component: {first}", hint) from None


def load_module(
    runtime: WasmRuntime,
    path: Path,
    pinned_sha256: str,
    allow_wasi: bool,
    cache: CompiledCache | None,
) -> LoadedModule:
    """Everything that can refuse a guard happens here, before it serves a single call."""
    started = time.perf_counter()
    module = str(path)
    data = read_module(path)
    sha256 = check_pin(module, data, pinned_sha256)
    component = cache.load(runtime.engine, sha256) if cache is not None else None
    from_cache = component is not None
    if component is None:
        component = compile_component(runtime, module, data)
    report = check_component(component, runtime.engine, module, allow_wasi)
    if cache is not None and not from_cache:
        cache.store(component, sha256)
    return LoadedModule(
        path=path,
        sha256=sha256,
        size=len(data),
        component=component,
        contract=report,
        from_cache=from_cache,
        load_ms=(time.perf_counter() - started) * 1000.0,
    )
