"""The differential suite: what the SDK client sees from a real server directly equals what it
sees through each of mcpward's fronts, in each era the server speaks, apart from the written
allow-list in tests/differential/allowances.py (docs/conformance.md, "Differential suite").

server-everything (npm, handshake era only) and mcp-server-time (PyPI, both eras) run over
stdio; the gateway runs with its default guards, as a plain deployment would."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.differential import scripts
from tests.differential.allowances import ALLOWED, reconcile
from tests.differential.recorder import Recorder, Recording
from tests.differential.targets import TARGETS, client_for, http_front
from tests.support.gateway import ClientMode, everything_upstream, time_upstream

# The scripts use handshake-era methods (ping, subscribe, logging) on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
CASES = [
    pytest.param("everything", "legacy", "2025-11-25", id="server-everything-handshake"),
    pytest.param("time", "legacy", "2025-11-25", id="mcp-server-time-handshake"),
    pytest.param("time", "auto", "2026-07-28", id="mcp-server-time-2026-07-28"),
]
SERVERS: dict[str, tuple[Any, scripts.Script]] = {
    "everything": (everything_upstream, scripts.everything),
    "time": (time_upstream, scripts.time_server),
}


def _text(recording: Recording) -> list[str]:
    return json.dumps(recording, indent=1, sort_keys=True).splitlines()


def _difference(target: str, direct: Recording, through: Recording) -> str:
    diff = difflib.unified_diff(_text(direct), _text(through), "direct", target, lineterm="")
    return "\n".join(diff)


@pytest.mark.parametrize(("server", "mode", "era"), CASES)
async def test_the_client_sees_the_server_as_if_directly(
    tmp_path: Path, server: str, mode: ClientMode, era: str
) -> None:
    make_upstream, script = SERVERS[server]
    upstream = make_upstream()
    recordings: dict[str, Recording] = {}
    async with http_front(upstream, tmp_path / "http-state") as url:
        for target in TARGETS:
            recorder = Recorder()
            callbacks = scripts.client_callbacks(recorder)
            state = tmp_path / "stdio-state"
            async with client_for(
                target, upstream, mode=mode, state_dir=state, url=url, **callbacks
            ) as client:
                await script(client, recorder)
            recordings[target] = recorder.steps
    assert recordings["direct"][0] == ["protocol_version", {"result": era}]
    for target in TARGETS[1:]:
        direct, through, used = reconcile(recordings["direct"], recordings[target])
        assert used <= ALLOWED.keys()
        assert direct == through, _difference(target, direct, through)
