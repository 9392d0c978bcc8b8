"""The telemetry layer's parts: histogram buckets, capped labels, the settings model, and that
the layer imports nothing of mcpward's (everything may call into it)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from mcpward.pipeline.executor import GuardRun
from mcpward.telemetry.histogram import Histogram
from mcpward.telemetry.labels import INVALID, OTHER, CappedLabels
from mcpward.telemetry.metrics import GatewayMetrics
from mcpward.telemetry.settings import TelemetrySettings
from tests.architecture.test_imports import _graph


def test_histogram_buckets_are_cumulative_and_inclusive() -> None:
    hist = Histogram((0.001, 0.01))
    for value in (0.0005, 0.001, 0.005, 0.5):
        hist.observe(value)
    assert hist.cumulative() == [("0.001", 2.0), ("0.01", 3.0), ("+Inf", 4.0)]
    assert hist.count == 4 and hist.total == pytest.approx(0.5065)


def test_capped_labels_keep_the_first_values_and_refuse_odd_ones() -> None:
    labels = CappedLabels(cap=2, max_scopes=1)
    assert labels.admit("up", "a") == "a"
    assert labels.admit("up", 'x"\n{}') == INVALID
    assert labels.admit("up", "b") == "b"
    assert labels.admit("up", "c") == OTHER
    assert labels.admit("up", "a") == "a"
    assert labels.admit("other-scope", "a") == OTHER  # scopes are capped too
    assert CappedLabels(cap=5).admit("up", "x" * 129) == INVALID


def test_exposition_parses_and_guard_codes_are_capped() -> None:
    metrics = GatewayMetrics(["up"])
    runs = [
        GuardRun("hook", "http_hook", "tool_invoke", "deny", 1.0, f"code-{i}") for i in range(100)
    ]
    for run in runs:
        metrics.observe_call("up", "tools/call", "deny", [run], 2.0, None)
    body, content_type = metrics.render()
    assert content_type.startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    codes = {s.labels["code"] for s in families["mcpward_guard_stops"].samples}
    assert len(codes) == 33 and OTHER in codes
    assert sum(s.value for s in families["mcpward_guard_stops"].samples) == 100
    calls = families["mcpward_calls"].samples
    assert [(s.labels, s.value) for s in calls] == [
        ({"upstream": "up", "method": "tools/call", "decision": "deny"}, 100.0)
    ]
    guard = [
        s for s in families["mcpward_guard_duration_seconds"].samples if s.name.endswith("_count")
    ]
    assert guard[0].value == 100 and guard[0].labels == {"guard": "hook"}


def test_settings_refuse_unknown_fields_and_bad_values() -> None:
    assert TelemetrySettings().otlp_endpoint is None  # nothing leaves the host by default
    with pytest.raises(ValidationError):
        TelemetrySettings.model_validate({"otlp": "http://x"})
    with pytest.raises(ValidationError):
        TelemetrySettings(otlp_endpoint="ftp://collector")
    with pytest.raises(ValidationError):
        TelemetrySettings(sampling_ratio=2)
    with pytest.raises(ValidationError):
        TelemetrySettings(metrics_listen="9464; rm -rf")


def test_telemetry_imports_nothing_of_mcpward() -> None:
    """Nothing but the modules below every layer (a SecretRef for the metrics token)."""
    graph = _graph()
    outside = {
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith("mcpward.telemetry")
        for target in targets
        if not target.startswith("mcpward.telemetry") and target != "mcpward.secret_refs"
    }
    assert outside == set()
