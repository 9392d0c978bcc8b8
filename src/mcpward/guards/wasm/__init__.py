"""Guard kind `wasm`: user-written guards as sandboxed WebAssembly components.

wasmtime itself is imported only when a guard loads.
"""

from mcpward.guards.wasm.guard import WasmGuard, WasmGuardOptions

__all__ = ["WasmGuard", "WasmGuardOptions"]
