"""tool_poisoning through the real gateway (`mcpward run --config`, SDK client) against an
upstream whose tools are written in Spanish, German, French and Portuguese.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.fixtures import multilingual_server as fixture

FIXTURE = str(Path(fixture.__file__).resolve())
GUARDS = [{"kind": "tool_poisoning", "priority": 20, "runs_on": ["tools_list"]}]


def upstream(variant: str) -> dict[str, Any]:
    return {
        "id": f"ml-{variant}",
        "kind": "stdio",
        "command": sys.executable,
        "args": [FIXTURE, "--variant", variant],
    }


async def test_spanish_poisoned_tool_is_dropped_and_benign_ones_pass(gateway_client: Any) -> None:
    async with gateway_client([upstream("poisoned")], guards=GUARDS, mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "exportar_informe" not in names
    assert {"wetter", "rechercher"} <= names


async def test_preference_manipulation_tool_is_dropped(gateway_client: Any) -> None:
    async with gateway_client([upstream("preference")], guards=GUARDS, mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "carte_pro" not in names
    assert "mapa" in names
