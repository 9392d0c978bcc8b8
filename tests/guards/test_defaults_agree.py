"""The default guards, docs/guards.md's table of them and `mcpward config check` say the same, and
what they say about `secrets` holds through the gateway: it judges everything an upstream sends the
client, and a credential in the client's own arguments is not refused unless ingress is turned on.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

from mcpward.guards.defaults import default_guard_specs
from mcpward.pipeline.phases import Phase
from tests.relay.test_upstream_texts import SECRETS, TIMEOUT_S, StdioClient
from tests.support.paths import REPO_ROOT

GuardRow = tuple[int, str, tuple[str, ...]]  # priority, id, phases


def defaults() -> list[GuardRow]:
    return [
        (spec.priority, spec.id or spec.kind, tuple(p.value for p in spec.runs_on))
        for spec in sorted(default_guard_specs(), key=lambda s: s.priority)
    ]


def documented() -> list[GuardRow]:
    """The rows of the table under docs/guards.md's "## Defaults"."""
    text = (REPO_ROOT / "docs" / "guards.md").read_text(encoding="utf-8")
    section = text.split("\n## Defaults\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            phases = tuple(re.findall(r"`([a-z_]+)`", cells[2]))
            rows.append((int(cells[0]), cells[1].strip("`"), phases))
    return rows


def checked(tmp_path: Path) -> list[GuardRow]:
    """What `mcpward config check` prints for a config that names no guards."""
    config = tmp_path / "mcpward.yaml"
    config.write_text(
        f"upstreams:\n  - id: up\n    command: {sys.executable}\n    args: ['-c', 'pass']\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", "config", "check", str(config)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "500"},  # one line per guard
    )
    rows = []
    for match in re.finditer(r"^\s+(\d+)\s+(\S+) \((\S+)\) on ([^;]+);", done.stdout, re.M):
        phases = tuple(p.strip() for p in match.group(4).split(","))
        rows.append((int(match.group(1)), match.group(2), phases))
    return rows


def test_defaults_docs_and_config_check_agree(tmp_path: Path) -> None:
    assert documented() == defaults()
    assert checked(tmp_path) == defaults()


def test_secrets_judges_all_an_upstream_sends_and_not_the_clients_arguments() -> None:
    phases = {p for _, gid, runs in defaults() if gid == "secrets" for p in runs}
    assert phases == {
        Phase.TOOL_RESULT.value,
        Phase.PROMPT_RESULT.value,
        Phase.RESOURCE_RESULT.value,
        Phase.UPSTREAM_ERROR.value,
        Phase.UPSTREAM_MESSAGE.value,
    }
    docs = (REPO_ROOT / "docs" / "guards.md").read_text(encoding="utf-8")
    assert "**Ingress is opt-in.**" in docs
    assert "Ingress denies by default" not in docs


async def test_a_key_in_the_arguments_reaches_the_upstream_only_without_ingress(
    tmp_path: Path,
) -> None:
    key = next(iter(SECRETS))
    params = {"name": "leak", "arguments": {"case": 4, "api_key": key}}
    async with StdioClient.open(tmp_path / "defaults", 1) as client:
        passed = await asyncio.wait_for(client.peer.request("tools/call", params), TIMEOUT_S)
    assert passed["error"]["code"] == -32001, passed  # the upstream's own answer: it got the call
    ingress = [{"kind": "secrets", "runs_on": ["tool_result", "tool_invoke"]}]
    async with StdioClient.open(tmp_path / "ingress", 1, ingress) as client:
        refused = await asyncio.wait_for(client.peer.request("tools/call", params), TIMEOUT_S)
    assert refused["error"]["code"] == -32013, refused
    assert refused["error"]["data"]["code"] == "secret_detected"
    assert key not in str(refused)
