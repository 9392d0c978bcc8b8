"""The content guards through the real gateway (`mcpward run --config`) with the SDK client and
a fixture upstream that has poisoned, shadowing and secret-leaking tools.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.fixtures import content_server as fixture

FIXTURE = str(Path(fixture.__file__).resolve())


def upstream(upstream_id: str, variant: str = "main") -> dict[str, Any]:
    return {
        "id": upstream_id,
        "kind": "stdio",
        "command": sys.executable,
        "args": [FIXTURE, "--variant", variant],
    }


CONTENT_GUARDS: list[dict[str, Any]] = [
    {"kind": "tool_poisoning", "priority": 20, "runs_on": ["tools_list"]},
    {"kind": "tool_shadowing", "priority": 25, "runs_on": ["tools_list"]},
    {"kind": "secrets", "priority": 60, "runs_on": ["tool_result", "tool_invoke"]},
    {
        "kind": "response_injection",
        "priority": 65,
        "runs_on": ["tool_result"],
        "config": {"action": "redact"},
    },
]


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


def receipts(config: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", "ledger", "export", "--config", str(config)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line)["receipt"] for line in done.stdout.splitlines() if line.strip()]


async def test_poisoned_tool_dropped_secrets_redacted_injection_removed(
    gateway_client: Any, tmp_path: Path
) -> None:
    async with gateway_client([upstream("main")], guards=CONTENT_GUARDS, mode="legacy") as client:
        names = await _names(client)
        assert "add" not in names  # poisoned description: dropped
        assert {"weather", "read_env", "fetch_note"} <= names
        # runs_on names tools_list only: what the guard hides still cannot be called
        with pytest.raises(MCPError) as caught:
            await client.call_tool("add", {"a": 1, "b": 2})
        assert caught.value.code == -32013
        assert (caught.value.data or {}).get("code") == "poisoned_item"

        result = await client.call_tool("read_env", {})
        shown = _text(result) + json.dumps(result.structured_content or {})
        for secret in fixture.SECRETS:
            assert secret not in shown
        assert "[REDACTED:github-token]" in shown
        assert "[REDACTED:aws-access-key-id]" in shown
        assert "region=eu-west-1" in shown  # only the secret spans go

        note = _text(await client.call_tool("fetch_note", {}))
        assert "Ignore all previous instructions" not in note
        assert "[REMOVED:" in note and "Meeting moved to 3pm." in note

    # The receipt-facing evidence reached the ledger: family ids and per-pattern counts only.
    written = receipts(tmp_path / "mcpward.yaml")
    exported = json.dumps(written)
    assert all(secret not in exported for secret in fixture.SECRETS)
    listing = next(r for r in written if r["method"] == "tools/list")
    poisoning = next(g for g in listing["guards"] if g["kind"] == "tool_poisoning")
    assert "concealment" in poisoning["evidence"]["families"]
    call = next(r for r in written if r["redactions"] == ["secret"])
    assert set(call["redaction_counts"]) == {"github-token", "aws-access-key-id"}
    assert any("prompt_injection" in r["redactions"] for r in written)


async def test_secret_in_arguments_is_denied(gateway_client: Any) -> None:
    async with gateway_client([upstream("main")], guards=CONTENT_GUARDS, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("weather", {"city": f"token={fixture.GITHUB_TOKEN}"})
        assert caught.value.code == -32013
        data = caught.value.data or {}
        assert data.get("guard") == "secrets" and data.get("code") == "secret_detected"
        assert fixture.GITHUB_TOKEN not in json.dumps(data) + str(caught.value)
        assert (await client.call_tool("weather", {"city": "Oslo"})).is_error is False


async def test_shadowing_upstream_loses_to_first_configured(gateway_client: Any) -> None:
    async with gateway_client(
        [upstream("main"), upstream("other", "shadow")], guards=CONTENT_GUARDS, mode="legacy"
    ) as client:
        names = await _names(client)
        assert "main__weather" in names
        assert "other__weather" not in names  # collides with main's weather; main is first
        assert "other__helper" not in names  # gives orders about main's read_env
        assert "main__read_env" in names


async def test_a_dropped_shadowing_tool_cannot_be_called_by_name(gateway_client: Any) -> None:
    """The default guards (no `guards:` in the config): a tool tool_shadowing leaves out of the
    list is refused when a client calls it by name, instead of reaching its upstream."""
    async with gateway_client(
        [upstream("main"), upstream("other", "shadow")], mode="legacy"
    ) as client:
        names = await _names(client)
        assert "other__helper" not in names and "other__weather" not in names
        for name, reason in (
            ("other__helper", "references-other-upstream"),
            ("other__weather", "name-collision"),
        ):
            with pytest.raises(MCPError) as caught:
                await client.call_tool(name, {"task": "x", "city": "Oslo"})
            assert caught.value.code == -32013
            data = caught.value.data or {}
            assert data.get("guard") == "tool_shadowing" and data.get("code") == "shadowing_item"
            assert data.get("details") == {"reason": reason}
        assert (await client.call_tool("main__weather", {"city": "Oslo"})).is_error is False


async def test_adversarial_results_pass_quickly_and_intact(gateway_client: Any) -> None:
    guards = [
        *CONTENT_GUARDS[:3],
        {"kind": "response_injection", "priority": 65, "runs_on": ["tool_result"]},
    ]
    async with gateway_client(
        [upstream("main")],
        guards=guards,
        gateway={"max_frame_bytes": 32 * 1024 * 1024},
        mode="legacy",
    ) as client:
        big = await client.call_tool("big_page", {"size": 10 * 1024 * 1024})
        assert not big.is_error
        assert len(_text(big)) == 10 * 1024 * 1024
        deep = await client.call_tool("deep_json", {"depth": 40})
        assert not deep.is_error
