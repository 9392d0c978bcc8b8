"""Running calls into one guard component: a small pool of Store+instance pairs, per-call limits.

Each call gets a fresh fuel budget and an epoch deadline (the guard's timeout) and runs under the
store's memory/instance/table limits. A trap discards the instance; the next call builds a new one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wasmtime import Store, WasiConfig, WasmtimeError
from wasmtime.component import Func

from mcpward.guards.wasm.abi import call_export
from mcpward.guards.wasm.contract import GUARD_FUNCS, GUARD_INTERFACE
from mcpward.guards.wasm.engine import WasmRuntime
from mcpward.guards.wasm.errors import CallFailure, WasmCallError, WasmCallTimeout
from mcpward.guards.wasm.host import HostFunctions, build_linker
from mcpward.guards.wasm.loader import LoadedModule
from mcpward.guards.wasm.values import Arg, GuestAnswer

log = logging.getLogger("mcpward.guards.wasm")


@dataclass(frozen=True)
class SandboxLimits:
    fuel: int
    memory_bytes: int
    instances: int
    tables: int
    table_elements: int
    memories: int
    recycle_after: int  # calls served by one instance before it is rebuilt (guest state is reset)


@dataclass(slots=True)
class _Slot:
    store: Store
    funcs: dict[str, Func]
    calls: int = 0


def classify(error: WasmtimeError) -> CallFailure:
    """Map wasmtime's error text (its "Caused by" line) onto the closed vocabulary."""
    text = str(error)
    if "wasm trap: interrupt" in text:
        return CallFailure.TIMEOUT
    if "all fuel consumed" in text:
        return CallFailure.FUEL
    if "exceeds memory limits" in text or "memory minimum size" in text:
        return CallFailure.MEMORY
    if "resource limit exceeded" in text:
        return CallFailure.LIMIT
    return CallFailure.TRAP


def cause(error: WasmtimeError) -> str:
    """The last line of wasmtime's message: the cause, without the guest backtrace."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "unknown"


class GuardSandbox:
    """Thread-safe: a call takes an idle instance (or builds one), returns it unless it trapped."""

    def __init__(
        self,
        guard_id: str,
        runtime: WasmRuntime,
        module: LoadedModule,
        host: HostFunctions,
        limits: SandboxLimits,
        wasi_config_factory: Callable[[], WasiConfig] | None = None,
    ) -> None:
        self.guard_id = guard_id
        self.module = module
        self.limits = limits
        self._runtime = runtime
        self._host = host
        self._linker = build_linker(runtime.engine, host, module.contract.wasi_imports)
        self._wasi = module.contract.needs_wasi
        # Tests pass a factory that grants a capability, to prove the sandbox check is real.
        self._wasi_factory = wasi_config_factory or WasiConfig
        self._idle: list[_Slot] = []
        self._lock = threading.Lock()
        self.instances_built = 0
        self.instances_discarded = 0

    def _new_slot(self, timeout_s: float) -> _Slot:
        """A fresh Store and instance; the guest's start code runs under the limits of a call."""
        store = Store(self._runtime.engine)
        lim = self.limits
        store.set_limits(
            memory_size=lim.memory_bytes,
            table_elements=lim.table_elements,
            instances=lim.instances,
            tables=lim.tables,
            memories=lim.memories,
        )
        if self._wasi:
            store.set_wasi(self._wasi_factory())
        store.set_fuel(lim.fuel)
        store.set_epoch_deadline(self._runtime.ticker.deadline_ticks(timeout_s))
        try:
            instance = self._linker.instantiate(store, self.module.component)
            iface = instance.get_export_index(store, GUARD_INTERFACE)
            if iface is None:
                raise WasmtimeError(f"the instance does not export {GUARD_INTERFACE}")
            funcs: dict[str, Func] = {}
            for name in GUARD_FUNCS:
                index = instance.get_export_index(store, name, iface)
                func = instance.get_func(store, index) if index is not None else None
                if func is None:
                    raise WasmtimeError(f"the instance does not export {name}")
                funcs[name] = func
        except WasmtimeError as exc:
            raise self._failure(exc, "instantiate") from None
        with self._lock:
            self.instances_built += 1
        return _Slot(store, funcs)

    def prewarm(self, timeout_s: float) -> None:
        """Build one instance now, so the first call does not pay for instantiation."""
        with self._runtime.ticker.running():
            slot = self._new_slot(timeout_s)
        with self._lock:
            self._idle.append(slot)

    def _failure(self, exc: WasmtimeError, doing: str) -> WasmCallError:
        failure = classify(exc)
        detail = f"{doing}: {cause(exc)}"
        if failure is CallFailure.TIMEOUT:
            return WasmCallTimeout(self.guard_id, detail)
        return WasmCallError(self.guard_id, failure, detail)

    def call(self, export: str, args: Sequence[Arg], timeout_s: float) -> GuestAnswer:
        """Run one export to completion or to its limit. Blocking: call it from a worker thread."""
        ticker = self._runtime.ticker
        with ticker.running():
            with self._lock:
                slot = self._idle.pop() if self._idle else None
            if slot is None:
                slot = self._new_slot(timeout_s)
            store = slot.store
            store.set_fuel(self.limits.fuel)
            store.set_epoch_deadline(ticker.deadline_ticks(timeout_s))
            try:
                answer = call_export(slot.funcs[export], store, args)
            except BaseException as exc:
                # A trap poisons the instance; any other failure leaves its state unknown.
                with self._lock:
                    self.instances_discarded += 1
                if isinstance(exc, WasmtimeError):
                    raise self._failure(exc, export) from None
                raise
        slot.calls += 1
        if slot.calls < self.limits.recycle_after:
            with self._lock:
                self._idle.append(slot)
        return answer

    def close(self) -> None:
        with self._lock:
            self._idle.clear()
