"""Traces of judged calls exported over OTLP/HTTP to a receiver the test starts: a span per call,
children per guard run and per upstream round trip, the W3C traceparent the HTTP upstream got,
and no argument value in any attribute. Without an endpoint nothing is exported or imported."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.http.gateway_harness import fixture_upstream
from tests.support.gateway import (
    gateway_params,
    open_client,
    tool_filter_guard,
    write_gateway_config,
)
from tests.telemetry.otlp_receiver import ReceivedSpan, otlp_receiver

SECRET_ARGUMENT = "ARG-VALUE-7f3a9c-never-exported"
GUARDS = [
    {"id": "pin-gate", "kind": "rug_pull", "runs_on": ["tools_list", "tool_invoke"]},
    {**tool_filter_guard("test_error_*"), "id": "no-errors"},
]


async def test_spans_of_judged_calls_reach_the_otlp_receiver(tmp_path: Path) -> None:
    headers_file = tmp_path / "upstream-headers.jsonl"
    async with otlp_receiver() as receiver, fixture_upstream(headers_file) as upstream_url:
        upstream = {"id": "conf", "url": upstream_url, "allow_private": ["127.0.0.1"]}
        telemetry = {
            "otlp_endpoint": receiver.url,
            "otlp_allow_private": ["127.0.0.1"],  # the collector is dialled through the filter
            "service_name": "mcpward-test",
        }
        config = write_gateway_config(
            tmp_path, [upstream], guards=GUARDS, extra={"telemetry": telemetry}
        )
        async with open_client(gateway_params(config), mode="legacy") as client:
            await client.list_tools()
            result = await client.call_tool("test_simple_text", {"note": SECRET_ARGUMENT})
            assert not result.is_error
            with pytest.raises(MCPError) as denied:
                await client.call_tool("test_error_handling", {"note": SECRET_ARGUMENT})
            assert denied.value.error.code == -32013
        # the gateway flushes its spans as it shuts down

    spans = receiver.spans
    assert spans and {s.service for s in spans} == {"mcpward-test"}
    calls = [s for s in spans if s.name == "mcpward tools/call"]
    assert len(calls) == 2 and all(c.parent_id == "" for c in calls)
    allowed = next(c for c in calls if c.attributes["mcpward.decision"] == "allow")
    denied_call = next(c for c in calls if c.attributes["mcpward.decision"] == "deny")
    assert allowed.attributes["mcpward.upstream"] == "conf"
    assert allowed.attributes["mcpward.name"] == "test_simple_text"
    assert denied_call.attributes["mcpward.stopped_by"] == "no-errors"

    def children(parent: ReceivedSpan) -> list[ReceivedSpan]:
        return [s for s in spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]

    allowed_children = {s.name for s in children(allowed)}
    assert allowed_children == {
        "mcpward guard pin-gate",
        "mcpward guard no-errors",
        "mcpward upstream",
    }
    denied_children = children(denied_call)
    # the filter (priority 10) stopped the call before the pin gate ran
    assert [s.name for s in denied_children] == ["mcpward guard no-errors"]
    stop = next(s for s in denied_children if s.name == "mcpward guard no-errors")
    assert stop.attributes["mcpward.guard.outcome"] == "deny"

    # the upstream got the W3C traceparent of its round-trip span, and nothing of the client's
    round_trip = next(s for s in children(allowed) if s.name == "mcpward upstream")
    sent = [json.loads(line)["headers"] for line in headers_file.read_text().splitlines()]
    parents = [h["traceparent"] for h in sent if "traceparent" in h]
    assert len(parents) == 1
    version, trace_id, span_id, flags = parents[0].split("-")
    assert (version, trace_id, span_id) == ("00", allowed.trace_id, round_trip.span_id)
    assert int(flags, 16) & 1  # sampled

    # no argument value in any attribute, nor in the export's headers
    everything = json.dumps([s.attributes for s in spans]) + json.dumps(receiver.requests)
    assert SECRET_ARGUMENT not in everything


def test_without_an_endpoint_opentelemetry_is_not_imported(tmp_path: Path) -> None:
    code = (
        "import sys, asyncio\n"
        "from mcpward.config.loader import parse_config\n"
        "from mcpward.relay.gateway import Gateway\n"
        f"loaded = parse_config({{'upstreams': [{{'id': 'x', 'command': 'true'}}], "
        f"'state_dir': {str(tmp_path)!r}, 'guards': []}}, 't')\n"
        "async def main():\n"
        "    gateway = await Gateway.start(loaded)\n"
        "    assert gateway.tracing is None and gateway.metrics is None\n"
        "    await gateway.close()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_collector_is_dialled_through_the_egress_filter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A private collector address is refused at load unless allow-listed, and a name that
    resolves to one when the batch is sent is refused at dial time: the batch is dropped and
    logged (host and reason, once a minute), nothing is sent."""
    from mcpward.config.loader import ConfigError, parse_config
    from mcpward.egress.policy import EgressBlocked, EgressPolicy
    from mcpward.egress.poster import EgressPoster

    base = {
        "upstreams": [{"id": "x", "command": "true"}],
        "guards": {"replace_defaults": True, "list": []},
    }
    for endpoint in ("http://127.0.0.1:4318/v1/traces", "http://[::1]:4318/", "http://localhost/"):
        with pytest.raises(ConfigError, match=r"telemetry\.otlp_allow_private"):
            parse_config({**base, "telemetry": {"otlp_endpoint": endpoint}}, "t")
    with pytest.raises(ConfigError, match="otlp_allow_private: allow_private entry 'collector'"):
        parse_config(
            {
                **base,
                "telemetry": {"otlp_endpoint": "http://c/", "otlp_allow_private": ["collector"]},
            },
            "t",
        )
    allowed = {"otlp_endpoint": "http://127.0.0.1:4318/", "otlp_allow_private": ["127.0.0.1"]}
    loaded = parse_config({**base, "telemetry": allowed}, "t")
    assert loaded.config.telemetry.otlp_allow_private == ["127.0.0.1"]

    async def private_answer(host: str, port: int) -> list[str]:
        return ["10.0.0.7"]

    poster = EgressPoster(EgressPolicy(resolver=private_answer), timeout=2)
    with pytest.raises(EgressBlocked):
        poster.post("http://collector.example/v1/traces", b"x", {})

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

    from mcpward.telemetry.otlp_export import SendingSpanExporter

    exporter = SendingSpanExporter("http://collector.example/v1/traces", poster.post, poster.close)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with caplog.at_level(logging.WARNING, logger="mcpward.telemetry"):
        for _ in range(3):
            provider.get_tracer("t").start_span("call").end()
    assert exporter.failed == 3 and exporter.exported == 0
    refusals = [r.getMessage() for r in caplog.records if "traces not exported" in r.getMessage()]
    assert len(refusals) == 1 and "collector.example" in refusals[0]
    assert "EgressBlocked" in refusals[0] and "10.0.0.7" in refusals[0]
    provider.shutdown()
    assert exporter.export([]) is SpanExportResult.FAILURE  # closed with the provider
