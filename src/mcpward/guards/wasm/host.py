"""The host side of the contract for one guard (log, get-config, record-metric) and its Linker.

Host functions never raise into the guest: bad input is dropped and logged. WASI, when a guest
language needs it, is linked without capabilities and with a frozen clock that cannot wait.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wasmtime import Engine, WasmtimeError
from wasmtime import _ffi as ffi
from wasmtime.component import Linker, LinkerInstance

from mcpward.guards.wasm.abi import (
    read_enum,
    read_f64,
    read_string,
    read_string_pairs,
    write_option_string,
    write_record,
    write_u32,
    write_u64,
)
from mcpward.guards.wasm.contract import HOST_INTERFACE
from mcpward.guards.wasm.metrics import MetricsSink

log = logging.getLogger("mcpward.guards.wasm")

_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
MAX_LOG_CHARS = 512
LOG_BURST = 50
LOG_PER_SECOND = 10.0
MAX_LABELS = 8
MAX_LABEL_CHARS = 64
_METRIC_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class HostFunctions:
    """What one guard may ask of the gateway. Called on worker threads, so it keeps its own lock."""

    def __init__(self, guard_id: str, config: Mapping[str, str], metrics: MetricsSink) -> None:
        self.guard_id = guard_id
        self._config = dict(config)
        self._metrics = metrics
        self._lock = threading.Lock()
        self._tokens = float(LOG_BURST)
        self._refilled = time.monotonic()
        self._dropped_logs = 0

    # The three host functions drop what they cannot use instead of raising: an error here
    # would trap the guest, and a guard must not fail because of the gateway's bookkeeping.

    def log(self, level: str, message: str) -> None:
        try:
            self._log(level, message)
        except Exception:
            log.exception("wasm guard %s: host.log failed", self.guard_id)

    def _log(self, level: str, message: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(LOG_BURST, self._tokens + (now - self._refilled) * LOG_PER_SECOND)
            self._refilled = now
            if self._tokens < 1.0:
                self._dropped_logs += 1
                return
            self._tokens -= 1.0
            dropped, self._dropped_logs = self._dropped_logs, 0
        if dropped:
            log.warning("wasm guard %s: %d log lines dropped (rate limit)", self.guard_id, dropped)
        text = _CONTROL.sub("?", message[:MAX_LOG_CHARS])
        if len(message) > MAX_LOG_CHARS:
            text += "…"
        log.log(_LEVELS.get(level, logging.INFO), "wasm guard %s: %s", self.guard_id, text)

    def get_config(self, key: str) -> str | None:
        return self._config.get(key)

    def record_metric(self, name: str, value: float, labels: list[tuple[str, str]]) -> None:
        try:
            self._record_metric(name, value, labels)
        except Exception:
            log.exception("wasm guard %s: host.record-metric failed", self.guard_id)

    def _record_metric(self, name: str, value: float, labels: list[tuple[str, str]]) -> None:
        if not _METRIC_NAME.match(name) or name.startswith("mcpward"):
            log.debug("wasm guard %s: metric with an unusable name dropped", self.guard_id)
            return
        if not math.isfinite(value):
            return
        clean = [(k[:MAX_LABEL_CHARS], v[:MAX_LABEL_CHARS]) for k, v in labels[:MAX_LABELS]]
        self._metrics.record(self.guard_id, name, value, tuple(sorted(clean)))


class _Refused(Exception):
    """Raised by a host function to trap the guest on purpose."""


RawArgs = Any  # ctypes arrays of wasmtime_component_val_t
RawHandler = Callable[[RawArgs, RawArgs], None]

# Handlers by the id wasmtime hands back to the one C callback; entries leave with their Linker.
_HANDLERS: dict[int, RawHandler] = {}
_HANDLER_IDS = itertools.count(1)


@ffi.wasmtime_component_func_callback_t
def _dispatch(data: Any, _context: Any, _ty: Any, args: Any, _n: int, results: Any, _m: int) -> int:
    """The single entry from wasm into Python host functions: nothing may escape it.

    wasmtime-py's own callback path re-reads the function type on every call and parks Python
    exceptions in a process-global slot; this path does neither. An error return traps the guest.
    """
    try:
        _HANDLERS[data or 0](args, results)
        return 0
    except _Refused as exc:
        error = WasmtimeError(str(exc))
    except Exception as exc:
        log.error("host function failed: %s", type(exc).__name__)
        error = WasmtimeError(f"host function failed: {type(exc).__name__}")
    return ctypes.cast(error._consume(), ctypes.c_void_p).value or 0


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release(data: Any) -> None:
    _HANDLERS.pop(data or 0, None)


def _add(instance: LinkerInstance, name: str, handler: RawHandler) -> None:
    handle = next(_HANDLER_IDS)
    _HANDLERS[handle] = handler
    encoded = name.encode()
    error = ffi.wasmtime_component_linker_instance_add_func(
        instance.ptr(),
        ctypes.create_string_buffer(encoded),
        len(encoded),
        _dispatch,
        handle,
        _release,
    )
    if error:
        _HANDLERS.pop(handle, None)
        raise WasmtimeError._from_ptr(error)


def _host_handlers(host: HostFunctions) -> dict[str, RawHandler]:
    def log_(args: RawArgs, _results: RawArgs) -> None:
        host.log(read_enum(args[0]), read_string(args[1]))

    def get_config(args: RawArgs, results: RawArgs) -> None:
        write_option_string(results[0], host.get_config(read_string(args[0])))

    def record_metric(args: RawArgs, _results: RawArgs) -> None:
        host.record_metric(read_string(args[0]), read_f64(args[1]), read_string_pairs(args[2]))

    return {"log": log_, "get-config": get_config, "record-metric": record_metric}


def _refuse_wait(_args: RawArgs, _results: RawArgs) -> None:
    raise _Refused("guards have no clock to wait on")


def _frozen_datetime(_args: RawArgs, results: RawArgs) -> None:
    # datetime {seconds: u64, nanoseconds: u32}: always the epoch
    entries = write_record(results[0], (b"seconds", b"nanoseconds"))
    write_u64(entries[0].val, 0)
    write_u32(entries[1].val, 0)


def _zero(_args: RawArgs, results: RawArgs) -> None:
    write_u64(results[0], 0)


def _one_nanosecond(_args: RawArgs, results: RawArgs) -> None:
    write_u64(results[0], 1)


_CLOCK_SHADOWS: dict[str, dict[str, RawHandler]] = {
    "wasi:clocks/wall-clock@": {"now": _frozen_datetime, "resolution": _frozen_datetime},
    "wasi:clocks/monotonic-clock@": {
        "now": _zero,
        "resolution": _one_nanosecond,
        "subscribe-instant": _refuse_wait,
        "subscribe-duration": _refuse_wait,
    },
}


def build_linker(engine: Engine, host: HostFunctions, wasi_imports: Sequence[str]) -> Linker:
    """A Linker with the host interface and, only if the guest imports WASI, WASI without rights."""
    linker = Linker(engine)
    if wasi_imports:
        linker.add_wasip2()
        linker.allow_shadowing = True
    with linker.root() as root:
        with root.add_instance(HOST_INTERFACE) as iface:
            for name, handler in _host_handlers(host).items():
                _add(iface, name, handler)
        for name in wasi_imports:
            for prefix, funcs in _CLOCK_SHADOWS.items():
                if name.startswith(prefix):
                    with root.add_instance(name) as clock:
                        for fname, func in funcs.items():
                            _add(clock, fname, func)
    return linker
