"""The MCP conformance suite (server mode, both protocol eras) gives, scenario by scenario, the
same results through mcpward as against the server alone (docs/conformance.md, "Conformance
table"), for each way a server is put behind the gateway:

- `http-front`: the HTTP front, the fixture as an HTTP upstream;
- `http-front-stdio-upstream`: the HTTP front, the fixture as a stdio upstream;
- `stdio-front`: the stdio front (`mcpward run -- python fixture --stdio`), reached through the
  HTTP front because the harness speaks HTTP only; it adds the stdio front to `http-front-stdio-
  upstream`, so a difference it alone shows is the stdio front's.

A fresh stdio process per client session makes the two stdio targets slow (2-4 s a scenario,
about six minutes for the three suites), so they run when MCPWARD_CONFORMANCE_STDIO=1; the stdio
front is checked on every run by tests/differential. Scenario results compare the checks that
failed: a check that passed directly may be INFO through the gateway where the spec leaves a
choice (the gateway answers a quick request with a JSON body, not an SSE stream).

Every run must also match the baseline files in tests/conformance/ (the harness fails on
unexpected and on stale entries). The harness cannot send a credential, so it reaches the
authenticated front through a loopback relay that adds the bearer token
(tests/http/credential_injector.py), listed in allowed_hosts the way a reverse proxy would be.
Each target has its own fixture process: one suite's list_changed scenario adds and removes a tool
that a concurrent run's tools-list would otherwise see."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio

from tests.http.credential_injector import credential_injector
from tests.http.gateway_harness import FIXTURE, fixture_upstream, gateway_front, token_entry
from tests.support import paths

TOKEN = "conformance-token-0123456789abcdef"
BASELINES = paths.REPO_ROOT / "tests" / "conformance"
on_module_loop = pytest.mark.asyncio(loop_scope="module")
SCENARIO_LINE = re.compile(r"^[✓✗]\s+(\S+):\s+(\d+) passed, (\d+) failed", re.MULTILINE)

SUITES = [
    ("0.1.16", paths.CONFORMANCE, [], "server-0.1.16.yml"),
    (
        "2025-11-25",
        paths.CONFORMANCE_ALPHA,
        ["--suite", "all", "--spec-version", "2025-11-25"],
        "server-2025-11-25.yml",
    ),
    (
        "2026-07-28",
        paths.CONFORMANCE_ALPHA,
        ["--suite", "all", "--spec-version", "2026-07-28"],
        "server-2026-07-28.yml",
    ),
]
STDIO_TARGETS = ("http-front-stdio-upstream", "stdio-front")
WITH_STDIO = os.environ.get("MCPWARD_CONFORMANCE_STDIO") == "1"
GATEWAY_TARGETS = ("http-front", *(STDIO_TARGETS if WITH_STDIO else ()))


@dataclass
class Targets:
    urls: dict[str, str]
    out: Path


def _stdio_fixture(upstream_id: str, *, through_gateway: Path | None) -> dict[str, Any]:
    """The fixture over stdio; with `through_gateway` (a state directory), behind `mcpward run`."""
    command = [sys.executable, str(FIXTURE), "--stdio"]
    if through_gateway is None:
        return {"id": upstream_id, "kind": "stdio", "command": command[0], "args": command[1:]}
    return {
        "id": upstream_id,
        "kind": "stdio",
        "command": sys.executable,
        "args": ["-m", "mcpward.cli.main", "run", "--", *command],
        "env": {"MCPWARD_STATE_DIR": str(through_gateway)},
    }


@contextlib.asynccontextmanager
async def _front(upstream: dict[str, Any], state: Path) -> AsyncIterator[str]:
    """A gateway's HTTP front serving `upstream`, behind a relay that adds the token."""
    async with credential_injector(TOKEN) as relay:
        hosts = [f"127.0.0.1:{relay.port}", f"localhost:{relay.port}"]
        front = {
            "tokens": [token_entry(TOKEN, "conformance")],
            "allowed_hosts": hosts,
            "allowed_origins": [f"http://{h}" for h in hosts],
        }
        # guards=None: the built-in default guards, as a plain deployment would run them.
        async with gateway_front([upstream], state, front) as (_, url):
            relay.target_port = urlsplit(url).port or 0
            yield f"http://127.0.0.1:{relay.port}/mcp"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def targets(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Targets]:
    directory = tmp_path_factory.mktemp("conformance")
    async with contextlib.AsyncExitStack() as stack:
        direct = await stack.enter_async_context(fixture_upstream())
        upstream = await stack.enter_async_context(fixture_upstream())
        http = {"id": "fixture", "url": upstream, "allow_private": ["127.0.0.1"]}
        urls = {
            "direct": direct,
            "http-front": await stack.enter_async_context(_front(http, directory / "http")),
        }
        if WITH_STDIO:
            stdio = _stdio_fixture("fixture", through_gateway=None)
            inner = _stdio_fixture("fixture", through_gateway=directory / "inner")
            for name, entry in zip(STDIO_TARGETS, (stdio, inner), strict=True):
                urls[name] = await stack.enter_async_context(_front(entry, directory / name))
        yield Targets(urls, directory)


async def run_suite(
    package: str, url: str, extra: list[str], baseline: Path, out: Path
) -> tuple[int, str]:
    harness = paths.npm_bin(package)
    proc = await asyncio.create_subprocess_exec(
        str(paths.node22()),
        str(harness),
        "server",
        "--url",
        url,
        *extra,
        "--expected-failures",
        str(baseline),
        "-o",
        str(out),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(proc.communicate(), 600)
    return proc.returncode or 0, output.decode("utf-8", "replace")


def scenarios(output: str) -> dict[str, int]:
    """Each scenario's number of failed checks, from the harness's report."""
    return {m[1]: int(m[3]) for m in SCENARIO_LINE.finditer(output)}


def summary(output: str) -> str:
    return output[output.find("=== SUMMARY") :] if "=== SUMMARY" in output else output[-3000:]


@on_module_loop
@pytest.mark.parametrize(
    ("label", "package", "extra", "baseline"), SUITES, ids=[s[0] for s in SUITES]
)
async def test_the_gateway_changes_no_conformance_result(
    targets: Targets, label: str, package: str, extra: list[str], baseline: str
) -> None:
    names = list(targets.urls)
    runs = await asyncio.gather(
        *(
            run_suite(
                package,
                targets.urls[name],
                extra,
                BASELINES / baseline,
                targets.out / f"{name}-{label}",
            )
            for name in names
        )
    )
    results = dict(zip(names, runs, strict=True))
    direct_code, direct = results["direct"]
    assert direct_code == 0, f"the baseline no longer describes the fixture:\n{summary(direct)}"
    expected = scenarios(direct)
    assert expected, f"no scenario results in the harness output:\n{summary(direct)}"
    for name in GATEWAY_TARGETS:
        code, output = results[name]
        assert scenarios(output) == expected, f"{name} changed results:\n{summary(output)}"
        assert code == 0, f"{name}: mcpward added conformance failures:\n{summary(output)}"
