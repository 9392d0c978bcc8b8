"""Where guard metrics land: the guest's `host.record-metric` and the runtime's own call counters.

An in-process registry of series (count, sum, last) keyed by guard id, name and labels, with a
per-guard cap on distinct series so a guest cannot grow the gateway's memory without bound.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

Labels = tuple[tuple[str, str], ...]

MAX_SERIES_PER_GUARD = 1000


class MetricsSink(Protocol):
    def record(self, guard_id: str, name: str, value: float, labels: Labels = ()) -> None: ...


@dataclass(slots=True)
class Series:
    count: int = 0
    total: float = 0.0
    last: float = 0.0


class GuardMetrics:
    """Thread-safe: guest host calls arrive on worker threads."""

    def __init__(self, max_series_per_guard: int = MAX_SERIES_PER_GUARD) -> None:
        self._series: dict[tuple[str, str, Labels], Series] = {}
        self._per_guard: dict[str, int] = {}
        self._dropped: dict[str, int] = {}
        self._max = max_series_per_guard
        self._lock = threading.Lock()

    def record(self, guard_id: str, name: str, value: float, labels: Labels = ()) -> None:
        key = (guard_id, name, labels)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                if self._per_guard.get(guard_id, 0) >= self._max:
                    self._dropped[guard_id] = self._dropped.get(guard_id, 0) + 1
                    return
                self._per_guard[guard_id] = self._per_guard.get(guard_id, 0) + 1
                series = self._series[key] = Series()
            series.count += 1
            series.total += value
            series.last = value

    def get(self, guard_id: str, name: str, labels: Labels = ()) -> Series | None:
        with self._lock:
            series = self._series.get((guard_id, name, labels))
            return None if series is None else Series(series.count, series.total, series.last)

    def dropped(self, guard_id: str) -> int:
        with self._lock:
            return self._dropped.get(guard_id, 0)

    def snapshot(self) -> dict[tuple[str, str, Labels], Series]:
        with self._lock:
            return {k: Series(v.count, v.total, v.last) for k, v in self._series.items()}


GUARD_METRICS = GuardMetrics()
