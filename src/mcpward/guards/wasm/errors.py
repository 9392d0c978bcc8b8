"""Errors of the WebAssembly guard runtime: refused at load, or failed during one call.

A call failure carries a closed-vocabulary reason; the pipeline applies the guard's failure mode.
"""

from __future__ import annotations

from enum import StrEnum


class WasmGuardLoadError(Exception):
    """A guard module that must not run: unreadable, pinned to another hash, or off-contract."""

    def __init__(self, module: str, reason: str, fix: str = "") -> None:
        self.module = module
        self.reason = reason
        self.fix = fix
        text = f"wasm guard {module}: {reason}"
        super().__init__(f"{text}; {fix}" if fix else text)


class CallFailure(StrEnum):
    """Why a guard call produced no usable decision (recorded in logs and metrics)."""

    TIMEOUT = "timeout"  # the wall-clock (epoch) deadline passed
    FUEL = "fuel_exhausted"  # the instruction budget ran out
    MEMORY = "memory_limit"  # instantiation needed more memory than allowed
    LIMIT = "resource_limit"  # instances/tables/memories over their limits
    TRAP = "trap"  # any other trap: unreachable, bounds, a host-refused call
    GUEST_ERROR = "guest_error"  # the guard returned err(message)
    BAD_ANSWER = "bad_answer"  # the decision broke the contract (bad JSON, unknown action)
    BUSY = "busy"  # no instance became free before the deadline


class WasmCallError(Exception):
    """One call failed; the guard's instance was discarded if it trapped."""

    def __init__(self, guard_id: str, failure: CallFailure, detail: str = "") -> None:
        self.guard_id = guard_id
        self.failure = failure
        self.detail = detail
        text = f"wasm guard {guard_id}: {failure.value}"
        super().__init__(f"{text}: {detail}" if detail else text)


class WasmCallTimeout(WasmCallError, TimeoutError):
    """The epoch deadline stopped the guest; the executor records it as a timeout."""

    def __init__(self, guard_id: str, detail: str = "") -> None:
        super().__init__(guard_id, CallFailure.TIMEOUT, detail)
