"""A lock-free latency histogram: one bisect and two additions per observation.

Each histogram has a single writer (the event loop, or one thread); scrapes read it as it is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

# Seconds. Guards and the gateway's own work are sub-millisecond; hooks and upstreams are not.
FAST_BUCKETS = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)
DISK_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class Histogram:
    """Counts per bucket (not cumulative) plus the sum, in seconds."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float] = FAST_BUCKETS) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, float]]:
        """Prometheus buckets: (upper bound, observations at or under it), ending with +Inf."""
        out: list[tuple[str, float]] = []
        running = 0
        for bound, n in zip((*map(repr, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, float(running)))
        return out
