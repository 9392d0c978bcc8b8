"""How a wrapped session's gateway is assembled: the config (file, mapping or LoadedConfig)
narrowed to the wrapped upstream, the server's identity as `mcpward run` would compute it, and
the mapping of the gateway's error codes to exceptions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mcp.shared.exceptions import MCPError

from mcpward import (
    CallDenied,
    ContractHeld,
    GatewayInternalError,
    MCPWardError,
    UpstreamUnavailable,
    guarded,
)
from mcpward.config.loader import ConfigError, load_config, parse_config
from mcpward.config.upstreams import HttpUpstream, StdioUpstream
from mcpward.library.assembly import (
    STAND_IN_COMMAND,
    gateway_config,
    server_identity,
    server_name,
)
from mcpward.library.errors import error_from
from mcpward.upstreams.connectors import make_connection
from tests.library.support import calls_in, sdk_session, time_server


def write_config(tmp_path: Path) -> Path:
    """A config written for `mcpward run` with two upstreams and its own guard list."""
    path = tmp_path / "mcpward.yaml"
    data = {
        "state_dir": str(tmp_path / "state"),
        "gateway": {"namespacing": "always", "request_timeout_s": 9},
        "upstreams": [
            {"id": "other", "command": "/nonexistent/never-started"},
            {"id": "time", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        ],
        "guards": {
            "replace_defaults": True,
            "list": [{"kind": "rug_pull", "runs_on": ["tools_list", "tool_invoke"]}],
        },
    }
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_config_is_narrowed_to_the_wrapped_upstream(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    for source in (path, str(path), load_config(path)):
        loaded = gateway_config(source, "time")
        (spec,) = loaded.config.upstreams
        assert isinstance(spec, StdioUpstream) and spec.id == "time"
        assert spec.restart.enabled is False  # an SDK session cannot be restarted
        assert loaded.config.gateway.namespacing == "never"  # the server's own names
        assert loaded.config.gateway.request_timeout_s == 9
        assert loaded.config.state_dir == tmp_path / "state"
        assert [g.kind for g in loaded.guard_specs] == ["rug_pull"]


def test_an_upstream_the_config_does_not_name_gets_a_stand_in(tmp_path: Path) -> None:
    for source in (None, {"state_dir": str(tmp_path)}, write_config(tmp_path)):
        (spec,) = gateway_config(source, "bank").config.upstreams
        assert isinstance(spec, StdioUpstream)
        assert (spec.id, spec.command, spec.restart.enabled) == ("bank", STAND_IN_COMMAND, False)
    defaults = gateway_config(None, "bank")
    assert "rug_pull" in [g.kind for g in defaults.guard_specs]  # the built-in guards
    with pytest.raises(ConfigError, match=r"upstreams\[0\]\.id"):
        gateway_config(None, "not an id!")
    with pytest.raises(ConfigError, match="guards"):
        gateway_config({"guards": [{"kind": "no_such_guard"}]}, "bank")


def test_the_server_identity_is_the_one_mcpward_run_computes(tmp_path: Path) -> None:
    settings = gateway_config(None, "time").config.gateway
    params = time_server()
    stdio = make_connection(
        StdioUpstream(id="time", command=params.command, args=list(params.args)), settings
    )
    named = server_identity(params, "mcp-time", settings, "time")
    assert named.digest == stdio.identity_digest
    assert named.executable_sha256 is not None  # the resolved script's hash
    url = "https://mcp.example.com/mcp?x=1"
    http = make_connection(HttpUpstream(id="time", url=url), settings)
    assert server_identity(url, None, settings, "time").digest == http.identity_digest
    by_name = server_identity(None, "mcp-time", settings, "time")
    assert by_name.digest != named.digest and by_name.executable_sha256 is None


async def test_a_config_file_for_mcpward_run_works_unchanged(tmp_path: Path) -> None:
    """The other upstream is never started, names are not prefixed, the file's guards run."""
    async with (
        sdk_session(time_server()) as session,
        guarded(session, upstream_id="time", config=write_config(tmp_path)) as gs,
    ):
        assert "get_current_time" in {t.name for t in (await gs.list_tools()).tools}
        assert not (await gs.call_tool("get_current_time", {"timezone": "UTC"})).is_error
        assert server_name(session) == "mcp-time"  # what identifies it without `server=`
    (call,) = calls_in(tmp_path / "state")
    assert [g["id"] for g in call["guards"]] == ["rug_pull"]


def test_each_gateway_code_has_its_exception() -> None:
    cases = {
        -32010: ContractHeld,
        -32013: CallDenied,
        -32011: UpstreamUnavailable,
        -32012: GatewayInternalError,
    }
    for code, cls in cases.items():
        error = error_from({"code": code, "message": "m", "data": {"reason": "crashed"}})
        assert type(error) is cls and isinstance(error, MCPWardError)
        assert isinstance(error, MCPError) and (error.code, error.message) == (code, "m")
    own = error_from({"code": -32602, "message": "Unknown tool: x"})
    assert type(own) is MCPError  # the server's own answer, as the SDK raises it
    assert isinstance(error_from("nonsense"), GatewayInternalError)
    denied = error_from({"code": -32013, "message": "no", "data": {"guard": "g", "code": "c"}})
    assert isinstance(denied, CallDenied) and (denied.guard, denied.guard_code) == ("g", "c")


def test_parse_config_is_what_the_wrapper_validates_with() -> None:
    loaded = parse_config({"upstreams": [{"id": "x", "command": "y"}]})
    assert gateway_config(loaded, "x").config.upstreams[0].id == "x"
