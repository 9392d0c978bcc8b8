"""A stdio gateway loads only what its configuration uses (issue #24).

`mcpward run -- CMD` with the default guards is run for real in a child process (initialize, a
list, a call, end of input); at exit it writes `sys.modules`. The test asserts which heavy
libraries and mcpward layers are *not* loaded: a test of structure, not of time. The positive
checks (the default guards' modules are loaded, the call was answered) keep it from passing
vacuously, and the metrics case shows a setting that asks for a library brings it in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "tests" / "fixtures" / "echo_upstream.py"

# what a default stdio gateway must never import (third-party top-level packages)
HEAVY = (
    "mcp",  # the SDK (its types alone are tens of MiB)
    "mcp_types",
    "aiohttp",  # HTTP upstream client
    "httpx",  # JWKS, hook guards, consult
    "httpcore",
    "starlette",  # HTTP front, console
    "uvicorn",
    "jinja2",
    "psycopg",  # PostgreSQL store
    "psycopg_pool",
    "wasmtime",  # WebAssembly guards
    "opentelemetry",  # OTLP export
    "prometheus_client",  # metrics, only when served
    "jsonpath",  # RedactFields decisions
    "jsonschema",
    "rich",
    "hypothesis",
    "yaml",  # the quick form has no configuration file to read
)
# mcpward layers a default stdio gateway does not use
UNUSED_LAYERS = (
    "mcpward.fronts.http",
    "mcpward.fronts.metrics_listener",
    "mcpward.console",
    "mcpward.upstreams.http",
    "mcpward.egress.client",
    "mcpward.egress.session",
    "mcpward.store.postgres.pool",
    "mcpward.guards.wasm",
    "mcpward.guards.http_hook",
    "mcpward.contracts.consult.client",
    "mcpward.telemetry.metrics",
    "mcpward.telemetry.otlp_export",
    "mcpward.library",
    "mcpward.demo",
)
DEFAULT_GUARD_MODULES = (
    "mcpward.guards.access",
    "mcpward.guards.rug_pull",
    "mcpward.guards.tool_poisoning",
    "mcpward.guards.tool_shadowing",
    "mcpward.guards.secrets",
    "mcpward.guards.response_injection",
)

DUMP = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["mcpward", "run", *sys.argv[2:]]
from mcpward.cli.main import main
main()
"""

CLIENT = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "structure", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {}},
    },
]


def run_and_dump(tmp_path: Path, *flags: str) -> tuple[set[str], list[dict[str, object]]]:
    out = tmp_path / "modules.json"
    frames = "".join(json.dumps(m) + "\n" for m in CLIENT)
    proc = subprocess.run(
        [sys.executable, "-c", DUMP, str(out), *flags, "--", sys.executable, str(ECHO)],
        input=frames.encode(),
        capture_output=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "MCPWARD_STATE_DIR": str(tmp_path / "state")},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return set(json.loads(out.read_text())), answers


def loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], list[dict]]:
    return run_and_dump(tmp_path_factory.mktemp("structure"))


def test_the_default_stdio_gateway_served_the_call_with_its_guards(
    default_run: tuple[set[str], list[dict]],
) -> None:
    modules, answers = default_run
    by_id = {a.get("id"): a for a in answers}
    assert "result" in by_id[1] and "result" in by_id[2] and "result" in by_id[3]
    assert [m for m in DEFAULT_GUARD_MODULES if m not in modules] == []


def test_the_default_stdio_gateway_loads_no_heavy_library(
    default_run: tuple[set[str], list[dict]],
) -> None:
    modules, _ = default_run
    assert [name for name in HEAVY if loaded(modules, name)] == []


def test_the_default_stdio_gateway_loads_no_unused_layer(
    default_run: tuple[set[str], list[dict]],
) -> None:
    modules, _ = default_run
    assert [name for name in UNUSED_LAYERS if loaded(modules, name)] == []


def test_a_setting_that_asks_for_a_library_brings_it_in(tmp_path: Path) -> None:
    modules, answers = run_and_dump(tmp_path, "--metrics", "127.0.0.1:0")
    assert any(a.get("id") == 3 and "result" in a for a in answers)
    assert loaded(modules, "prometheus_client")
    assert loaded(modules, "mcpward.fronts.metrics_listener")


def test_every_listed_guard_kind_resolves_to_a_class_of_that_kind() -> None:
    """guards/kinds.py names modules instead of importing them: a typo or a renamed class would
    only show when a configuration asks for that kind, so every entry is resolved here."""
    from mcpward.guards.kinds import BUILTIN_GUARDS, guard_kinds

    kinds = guard_kinds()
    assert sorted(kinds) == sorted(BUILTIN_GUARDS)
    assert all(cls.kind == kind for kind, cls in kinds.items())
