"""The MCP conformance suite (server mode, both protocol eras) through mcpward's HTTP front adds
no failure to the same suite run directly against the upstream: both runs must match the
baseline files in tests/conformance/ (the harness fails on unexpected and on stale entries).

The harness cannot send a credential, so it reaches the authenticated front through a loopback
relay that adds the bearer token (tests/http/credential_injector.py), listed in allowed_hosts
the way a reverse proxy would be. MCPWARD_CONFORMANCE_DIRECT=1 also runs each suite directly
against the upstream first, to confirm the baseline still describes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import pytest_asyncio

from tests.http.credential_injector import credential_injector
from tests.http.gateway_harness import fixture_upstream, gateway_front, token_entry
from tests.support import paths

TOKEN = "conformance-token-0123456789abcdef"
BASELINES = paths.REPO_ROOT / "tests" / "conformance"
on_module_loop = pytest.mark.asyncio(loop_scope="module")

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


@dataclass
class Targets:
    direct: str
    gateway: str
    out: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def targets(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Targets]:
    directory = tmp_path_factory.mktemp("conformance")
    # Two upstreams: the direct and the gateway runs go concurrently, and one suite's
    # list_changed test adds and removes a tool that the other's tools-list would then see.
    async with (
        fixture_upstream() as direct,
        fixture_upstream() as upstream,
        credential_injector(TOKEN) as relay,
    ):
        hosts = [f"127.0.0.1:{relay.port}", f"localhost:{relay.port}"]
        front = {
            "tokens": [token_entry(TOKEN, "conformance")],
            "allowed_hosts": hosts,
            "allowed_origins": [f"http://{h}" for h in hosts],
        }
        upstreams = [{"id": "fixture", "url": upstream, "allow_private": ["127.0.0.1"]}]
        # guards=None: the built-in default guards, as a plain deployment would run them.
        async with gateway_front(upstreams, directory / "state", front) as (_, url):
            relay.target_port = urlsplit(url).port or 0
            yield Targets(direct, f"http://127.0.0.1:{relay.port}/mcp", directory)


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
    text = output.decode("utf-8", "replace")
    summary = text[text.find("=== SUMMARY") :] if "=== SUMMARY" in text else text[-3000:]
    return proc.returncode or 0, summary


@on_module_loop
@pytest.mark.parametrize(
    ("label", "package", "extra", "baseline"), SUITES, ids=[s[0] for s in SUITES]
)
async def test_gateway_adds_no_conformance_failure(
    targets: Targets, label: str, package: str, extra: list[str], baseline: str
) -> None:
    (direct_code, direct), (gateway_code, through) = await asyncio.gather(
        run_suite(
            package, targets.direct, extra, BASELINES / baseline, targets.out / f"direct-{label}"
        ),
        run_suite(
            package, targets.gateway, extra, BASELINES / baseline, targets.out / f"gateway-{label}"
        ),
    )
    assert direct_code == 0, f"the baseline no longer describes the upstream:\n{direct}"
    assert gateway_code == 0, f"mcpward added conformance failures:\n{through}"
