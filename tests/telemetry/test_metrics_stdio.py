"""/metrics of the real gateway in stdio mode (`mcpward run --metrics 127.0.0.1:PORT`): exact
counts after known calls (allowed, denied by a guard, held by drift), and bounded cardinality
against a hostile upstream that lists 10,000 tools."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from mcpward.cli.main import build_app
from mcpward.demo.server import write_control
from mcpward.fronts.metrics_posture import (
    MetricsListenerRefused,
    listen_address,
    metrics_token,
)
from mcpward.secret_refs import SecretRef
from mcpward.telemetry.labels import INVALID, OTHER, UNLISTED
from mcpward.telemetry.settings import TelemetrySettings
from mcpward.testing.rawpeer import RawPeer
from tests.support.gateway import (
    demo_upstream,
    gateway_argv,
    open_client,
    tool_filter_guard,
    write_gateway_config,
)
from tests.telemetry.scrape import free_port, scrape

HOSTILE = str(Path(__file__).with_name("hostile_upstream.py"))
GUARDS = [
    {"id": "pin-gate", "kind": "rug_pull", "runs_on": ["tools_list", "tool_invoke"]},
    {**tool_filter_guard("delete_*"), "id": "no-delete"},
]


def _params(config: Path, port: int) -> StdioServerParameters:
    argv = [*gateway_argv(config), "--metrics", f"127.0.0.1:{port}"]
    return StdioServerParameters(command=argv[0], args=argv[1:], env={"PYTHONUNBUFFERED": "1"})


async def test_counts_after_known_calls(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    write_control(control, drift=False, notify=False)
    config = write_gateway_config(tmp_path, [demo_upstream(control=control)], guards=GUARDS)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    async with open_client(_params(config, port), mode="legacy") as client:
        await client.list_tools()
        for word in ("one", "two", "three"):
            assert not (await client.call_tool("echo", {"message": word})).is_error
        with pytest.raises(MCPError) as denied:
            await client.call_tool("delete_file", {"path": "/etc/passwd"})
        assert denied.value.error.code == -32013
        write_control(control, drift=True, notify=True)
        await client.list_tools()
        with pytest.raises(MCPError) as held:
            await client.call_tool("echo", {"message": "four", "token": "sekrit-value"})
        assert held.value.error.code == -32010
        got = await scrape(url)

    call = {"upstream": "demo", "method": "tools/call"}
    assert got.value("mcpward_calls_total", **call, decision="allow") == 3
    assert got.value("mcpward_calls_total", **call, decision="deny") == 1
    assert got.value("mcpward_calls_total", **call, decision="hold") == 1
    assert got.value("mcpward_calls_total", method="tools/list") == 2
    assert got.value("mcpward_tool_calls_total", tool="echo", decision="allow") == 3
    assert got.value("mcpward_tool_calls_total", tool="echo", decision="hold") == 1
    assert got.value("mcpward_guard_stops_total", guard="no-delete", outcome="deny") == 1
    assert got.value("mcpward_guard_stops_total", guard="pin-gate", outcome="hold") == 1
    assert got.value("mcpward_guard_stops_total") == 2
    assert got.value("mcpward_guard_stops_total", guard="no-delete", code="tool_not_allowed") == 1
    assert got.value("mcpward_guard_stops_total", guard="pin-gate", code="contract_drift") == 1
    assert got.value("mcpward_open_holds") == 1
    # the pin gate judged all 5 calls (the filter stopped delete_file after it)
    assert got.value("mcpward_guard_duration_seconds_count", guard="pin-gate") >= 5
    assert got.value("mcpward_added_latency_seconds_count", method="tools/call") == 5
    assert got.value("mcpward_upstream_round_trip_seconds_count", upstream="demo") == 3
    assert got.value("mcpward_upstream_connections", upstream="demo") == 1
    # every recorded decision is one receipt: appends match the calls counted
    assert got.value("mcpward_ledger_appends_total") == got.value("mcpward_calls_total")
    assert got.value("mcpward_ledger_fsync_seconds_count") == got.value(
        "mcpward_ledger_fsyncs_total"
    )
    assert "sekrit-value" not in got.text and "/etc/passwd" not in got.text


async def test_hostile_tool_names_keep_series_bounded(tmp_path: Path) -> None:
    upstream = {"id": "hostile", "command": sys.executable, "args": [HOSTILE]}
    config = write_gateway_config(tmp_path, [upstream], guards=[])
    port = free_port()
    cap = 50  # telemetry.tool_label_cap's default
    argv = [*gateway_argv(config), "--metrics", f"127.0.0.1:{port}"]
    peer = await RawPeer.spawn(argv)
    try:
        await peer.initialize()
        names = [t["name"] for t in (await peer.call("tools/list", {}))["tools"]]
        assert len(names) == 10_000
        plain, unprintable = names[1::50], names[::500]  # 200 and 20 listed names
        called = unprintable + plain + [f"never-listed-{i}" for i in range(20)]
        replies = await asyncio.gather(
            *(peer.request("tools/call", {"name": n, "arguments": {}}) for n in called)
        )
        assert all("result" in r for r in replies)  # one upstream: unlisted names go through
        got = await scrape(f"http://127.0.0.1:{port}/metrics")
        more = [peer.request("tools/call", {"name": n, "arguments": {}}) for n in names[25::50]]
        await asyncio.gather(*more)  # 200 more distinct listed names
        again = await scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        await peer.close()
    tools = got.label_values("mcpward_tool_calls_total", "tool")
    assert OTHER in tools and INVALID in tools and UNLISTED in tools
    assert len(tools) <= cap + 3  # + _other, _invalid, _unlisted
    assert got.value("mcpward_tool_calls_total") == 240
    assert got.value("mcpward_tool_calls_total", tool=OTHER) == 150
    assert got.value("mcpward_tool_calls_total", tool=INVALID) == 20
    assert got.value("mcpward_tool_calls_total", tool=UNLISTED) == 20
    # Bounded: 200 more distinct names add no series (docs/operations.md states the bound; one
    # upstream without guards stays under 150 samples, histogram buckets included).
    assert again.value("mcpward_tool_calls_total", tool=OTHER) == 350
    assert again.series() == got.series() < 150, (got.series(), again.series())
    assert '"quoted"' not in got.text and "evil" not in got.text


def test_metrics_address_refusals(tmp_path: Path) -> None:
    config = str(write_gateway_config(tmp_path, [demo_upstream()], guards=[]))
    runner = CliRunner()
    app = build_app(["run"])
    done = runner.invoke(app, ["run", "--config", config, "--metrics", "0.0.0.0:9464"])
    assert done.exit_code == 2
    assert "not a loopback" in done.output and "--metrics-allow-non-loopback" in done.output
    done = runner.invoke(
        app,
        ["run", "--config", config, "--metrics", "127.0.0.1:9464", "--metrics-allow-non-loopback"],
    )
    assert done.exit_code == 2 and "is loopback" in done.output
    done = runner.invoke(app, ["run", "--config", config, "--metrics", "not an address"])
    assert done.exit_code == 2 and "--metrics takes HOST:PORT" in done.output


async def test_a_metrics_token_is_asked_for(tmp_path: Path) -> None:
    token = "metrics-token-0123456789abcdef"
    token_file = tmp_path / "metrics.token"
    token_file.write_text(token + "\n")
    config = write_gateway_config(tmp_path, [demo_upstream()], guards=[])
    port = free_port()
    argv = [*gateway_argv(config), "--metrics", f"127.0.0.1:{port}"]
    argv += ["--metrics-token-file", str(token_file)]
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    url = f"http://127.0.0.1:{port}/metrics"
    async with open_client(params, mode="legacy") as client:
        await client.list_tools()
        assert not (await client.call_tool("echo", {"message": "one"})).is_error
        got = await scrape(url, token=token)
        assert got.value("mcpward_tool_calls_total") == 1
        async with httpx.AsyncClient(timeout=10) as http:
            for headers in ({}, {"authorization": "Bearer wrong-token-0123456789"}):
                refused = await http.get(url, headers=headers)
                assert refused.status_code == 401
                assert refused.headers["www-authenticate"].startswith("Bearer")
                assert "mcpward_" not in refused.text


def test_a_non_loopback_listener_needs_a_token(tmp_path: Path) -> None:
    settings = TelemetrySettings(metrics_listen="0.0.0.0:9464", metrics_allow_non_loopback=True)
    with pytest.raises(MetricsListenerRefused, match="metrics_token"):
        listen_address(settings)
    short = tmp_path / "short.token"
    short.write_text("short")
    with_token = settings.model_copy(update={"metrics_token": SecretRef(file=short)})
    assert listen_address(with_token) == ("0.0.0.0", 9464)
    with pytest.raises(MetricsListenerRefused, match="at least 16"):
        metrics_token(with_token)
    missing = settings.model_copy(update={"metrics_token": SecretRef(env="MCPWARD_NO_SUCH_VAR")})
    with pytest.raises(MetricsListenerRefused, match="MCPWARD_NO_SUCH_VAR"):
        metrics_token(missing)
