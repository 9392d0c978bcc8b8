"""The gateway's metrics: plain counters and histograms updated on the hot path without locks or
allocations beyond a dict key, exposed by one collector on a registry of this gateway's own.

What each metric means, its labels and their bounds: docs/operations.md.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from mcpward.telemetry.histogram import DISK_BUCKETS, Histogram
from mcpward.telemetry.labels import DEFAULT_TOOL_CAP, UNLISTED, CappedLabels

# Caps per scope (docs/operations.md states the resulting series bounds).
METHOD_CAP = 12  # recorded methods: 3 judged + 4 list methods today
DECISION_CAP = 10  # evidence.vocabulary.PolicyDecision has 9 values
CODE_CAP = 32  # distinct stop codes per guard (hooks and WASM guards choose their own)
REASON_CAP = 16  # protocol.errors.UpstreamFailure has fewer

STOP_OUTCOMES = frozenset({"deny", "hold", "error", "timeout"})


class GuardRunView(Protocol):
    """What the metrics read of a guard run (pipeline.executor.GuardRun)."""

    @property
    def guard_id(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def code(self) -> str | None: ...
    @property
    def shadow(self) -> bool: ...
    @property
    def duration_ms(self) -> float: ...


@dataclass(frozen=True, slots=True)
class LedgerCounts:
    """What the evidence writer has counted so far (read at scrape time)."""

    appends: int
    fsyncs: int
    fsync_seconds: Histogram | None


@dataclass(slots=True)
class _Probes:
    """Values read only when scraped."""

    open_holds: Callable[[], int | None] | None = None
    ledger: Callable[[], LedgerCounts | None] | None = None
    links_up: dict[str, int] = field(default_factory=dict)


class GatewayMetrics:
    """Everything one gateway counts. Methods are called on the event loop's thread."""

    def __init__(self, upstream_ids: Sequence[str], tool_cap: int = DEFAULT_TOOL_CAP) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.upstreams = frozenset(upstream_ids)
        self._tools = CappedLabels(tool_cap, max_scopes=len(self.upstreams) + 1)
        self._methods = CappedLabels(METHOD_CAP, max_scopes=1)
        self._decisions = CappedLabels(DECISION_CAP, max_scopes=1)
        self._codes = CappedLabels(CODE_CAP)
        self._reasons = CappedLabels(REASON_CAP, max_scopes=1)
        self.calls: dict[tuple[str, str, str], int] = {}
        self.tool_calls: dict[tuple[str, str, str], int] = {}
        self.stops: dict[tuple[str, str, str, str], int] = {}
        self.guard_seconds: dict[str, Histogram] = {}
        self.added_seconds: dict[str, Histogram] = {}
        self.upstream_seconds: dict[str, Histogram] = {}
        self.upstream_down: dict[tuple[str, str], int] = {}
        self.restarts: dict[str, int] = dict.fromkeys(self.upstreams, 0)
        self.probes = _Probes(links_up=dict.fromkeys(self.upstreams, 0))
        self.registry.register(_Collector(self))

    # -- decisions (relay) -----------------------------------------------------------------

    def upstream_label(self, upstream: str | None) -> str:
        return upstream if upstream is not None and upstream in self.upstreams else "_none"

    def observe_call(
        self,
        upstream: str,
        method: str,
        decision: str,
        runs: Iterable[GuardRunView],
        gateway_ms: float | None,
        upstream_ms: float | None,
    ) -> None:
        """One recorded decision: its count, its guards' runs and stops, its latencies. One call
        per message with the histogram updates inlined: this runs on every judged message."""
        method = self._methods.admit("", method)
        decision = self._decisions.admit("", decision)
        key = (upstream, method, decision)
        calls = self.calls
        calls[key] = calls.get(key, 0) + 1
        hists = self.guard_seconds
        for run in runs:
            hist = hists.get(run.guard_id)
            if hist is None:
                hist = hists[run.guard_id] = Histogram()
            seconds = run.duration_ms * 0.001
            hist.counts[bisect_left(hist.bounds, seconds)] += 1
            hist.total += seconds
            if run.outcome in STOP_OUTCOMES:
                self._stopped(run)
        if gateway_ms is not None:
            hist = self.added_seconds.get(method)
            if hist is None:
                hist = self.added_seconds[method] = Histogram()
            seconds = gateway_ms * 0.001
            hist.counts[bisect_left(hist.bounds, seconds)] += 1
            hist.total += seconds
        if upstream_ms is not None:
            hist = self.upstream_seconds.get(upstream)
            if hist is None:
                hist = self.upstream_seconds[upstream] = Histogram()
            seconds = upstream_ms * 0.001
            hist.counts[bisect_left(hist.bounds, seconds)] += 1
            hist.total += seconds

    def count_tool_call(self, upstream: str, tool: str | None, listed: bool, decision: str) -> None:
        """A tools/call; the tool is named only if the upstream listed it (and under the cap)."""
        name = self._tools.admit(upstream, tool) if listed and tool else UNLISTED
        key = (upstream, name, self._decisions.admit("", decision))
        tool_calls = self.tool_calls
        tool_calls[key] = tool_calls.get(key, 0) + 1

    def _stopped(self, run: GuardRunView) -> None:
        label = self._codes.admit(run.guard_id, run.code or "none")
        key = (run.guard_id, run.outcome, label, "true" if run.shadow else "false")
        self.stops[key] = self.stops.get(key, 0) + 1

    # -- upstream connections (relay links) -------------------------------------------------

    def link_up(self, upstream: str) -> None:
        links = self.probes.links_up
        links[upstream] = links.get(upstream, 0) + 1

    def link_down(self, upstream: str, reason: str | None) -> None:
        links = self.probes.links_up
        links[upstream] = max(0, links.get(upstream, 0) - 1)
        if reason is not None:
            key = (upstream, self._reasons.admit("", reason))
            self.upstream_down[key] = self.upstream_down.get(key, 0) + 1

    def link_restarted(self, upstream: str) -> None:
        self.restarts[upstream] = self.restarts.get(upstream, 0) + 1

    # -- read at scrape time ----------------------------------------------------------------

    def watch_holds(self, count: Callable[[], int | None]) -> None:
        self.probes.open_holds = count

    def watch_ledger(self, counts: Callable[[], LedgerCounts | None]) -> None:
        self.probes.ledger = counts

    def render(self) -> tuple[bytes, str]:
        """The exposition body and its content type. Blocking (the pin store is read): callers
        on the event loop run it in a thread; the counters are copied in one step each."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def _histogram(name: str, doc: str, label: str, hists: dict[str, Histogram]) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=[label])
    for value, hist in list(hists.items()):
        family.add_metric([value], hist.cumulative(), sum_value=hist.total)
    return family


class _Collector:
    """Turns the plain counters into metric families on each scrape."""

    def __init__(self, metrics: GatewayMetrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.m
        calls = CounterMetricFamily(
            "mcpward_calls",
            "Judged messages by upstream, method and decision.",
            labels=["upstream", "method", "decision"],
        )
        for key, n in list(m.calls.items()):
            calls.add_metric(list(key), n)
        yield calls
        tools = CounterMetricFamily(
            "mcpward_tool_calls",
            "tools/call by upstream, listed tool name (capped) and decision.",
            labels=["upstream", "tool", "decision"],
        )
        for key, n in list(m.tool_calls.items()):
            tools.add_metric(list(key), n)
        yield tools
        stops = CounterMetricFamily(
            "mcpward_guard_stops",
            "Denials and holds (and fail-closed errors/timeouts) by guard, outcome and code.",
            labels=["guard", "outcome", "code", "shadow"],
        )
        for skey, n in list(m.stops.items()):
            stops.add_metric(list(skey), n)
        yield stops
        yield _histogram(
            "mcpward_guard_duration_seconds",
            "Time one guard took at one phase.",
            "guard",
            m.guard_seconds,
        )
        yield _histogram(
            "mcpward_added_latency_seconds",
            "Time the gateway spent on a judged message, excluding the upstream round trip.",
            "method",
            m.added_seconds,
        )
        yield _histogram(
            "mcpward_upstream_round_trip_seconds",
            "Time from forwarding a judged call to its upstream's answer.",
            "upstream",
            m.upstream_seconds,
        )
        yield from self._upstreams()
        yield from self._probed()

    def _upstreams(self) -> Iterator[Metric]:
        m = self.m
        up = GaugeMetricFamily(
            "mcpward_upstream_connections",
            "Connections to the upstream that are up now (one per client session).",
            labels=["upstream"],
        )
        for upstream, n in list(m.probes.links_up.items()):
            up.add_metric([upstream], n)
        yield up
        down = CounterMetricFamily(
            "mcpward_upstream_failures",
            "Upstream connections lost, by closed-vocabulary reason.",
            labels=["upstream", "reason"],
        )
        for key, n in list(m.upstream_down.items()):
            down.add_metric(list(key), n)
        yield down
        restarts = CounterMetricFamily(
            "mcpward_upstream_restarts",
            "Upstream connections restarted and usable again.",
            labels=["upstream"],
        )
        for upstream, n in list(m.restarts.items()):
            restarts.add_metric([upstream], n)
        yield restarts

    def _probed(self) -> Iterator[Metric]:
        probes = self.m.probes
        holds = probes.open_holds() if probes.open_holds is not None else None
        if holds is not None:
            yield GaugeMetricFamily(
                "mcpward_open_holds", "HOLDs in the pin store waiting for review.", value=holds
            )
        counts = probes.ledger() if probes.ledger is not None else None
        if counts is None:
            return
        yield CounterMetricFamily(
            "mcpward_ledger_appends", "Receipts committed to the ledger.", value=counts.appends
        )
        yield CounterMetricFamily(
            "mcpward_ledger_fsyncs", "fsyncs of the ledger's write-ahead log.", value=counts.fsyncs
        )
        hist = counts.fsync_seconds or Histogram(DISK_BUCKETS)
        family = HistogramMetricFamily(
            "mcpward_ledger_fsync_seconds", "Time one fsync of the ledger's log took."
        )
        family.add_metric([], hist.cumulative(), sum_value=hist.total)
        yield family
