"""The process-wide wasmtime Engine and the epoch ticker that makes call deadlines wall-clock time.

One Engine (fuel metering + epoch interruption) serves every guard; the ticker thread advances
the epoch every TICK_S, but only while some guard call is running, so an idle gateway pays nothing.
"""

from __future__ import annotations

import math
import platform
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version

from wasmtime import Config, Engine

TICK_S = 0.005
# Part of the compiled-code cache key: bump when the engine's settings change.
ENGINE_FLAGS = "fuel+epoch"


class EpochTicker:
    """Advances the engine's epoch on a drift-free 5 ms schedule while calls are in flight."""

    def __init__(self, engine: Engine, tick_s: float = TICK_S) -> None:
        self._engine = engine
        self._tick_s = tick_s
        self._active = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def deadline_ticks(self, timeout_s: float) -> int:
        """Epoch ticks to allow: the next tick may come at once, so one more than the quotient."""
        return max(1, math.ceil(timeout_s / self._tick_s)) + 1

    @contextmanager
    def running(self) -> Iterator[None]:
        """Keep the epoch moving for the duration of one call."""
        with self._cond:
            self._active += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mcpward-wasm-epoch", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._active == 0:
                    self._cond.wait()
            # A fresh schedule after idling; sleeping to absolute times keeps long deadlines exact.
            next_at = time.monotonic() + self._tick_s
            while True:
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self._engine.increment_epoch()
                next_at += self._tick_s
                with self._cond:
                    if self._active == 0:
                        break


class WasmRuntime:
    """The Engine, its ticker, and the key that names compiled code made by this runtime."""

    def __init__(self) -> None:
        config = Config()
        config.consume_fuel = True
        config.epoch_interruption = True
        self.engine = Engine(config)
        self.ticker = EpochTicker(self.engine)
        self.version = version("wasmtime")
        self.cache_tag = f"wasmtime-{self.version}-{platform.machine()}-{ENGINE_FLAGS}"


_RUNTIME: WasmRuntime | None = None
_RUNTIME_LOCK = threading.Lock()


def shared_runtime() -> WasmRuntime:
    """The one runtime of this process (compiled components belong to the Engine that made them)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None:
            _RUNTIME = WasmRuntime()
        return _RUNTIME
