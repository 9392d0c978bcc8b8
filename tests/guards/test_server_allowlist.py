"""server_allowlist with a real SQLite pin file: allow-list, identity pins, typosquats."""

# ruff: noqa: RUF001, RUF003 - look-alike characters are this module's subject

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcpward.guards.server_allowlist import typosquat_of
from mcpward.pipeline.decisions import Allow, Deny
from mcpward.pipeline.services import GatewayServices, UpstreamSnapshot
from tests.guards.conftest import make_guard, run_hook


class NoCatalog:
    def upstream_ids(self) -> list[str]:
        return []

    def snapshot(self, upstream: str) -> UpstreamSnapshot | None:
        return None

    async def refresh(self, upstream: str) -> UpstreamSnapshot | None:
        return None

    def subscribe(self, listener: Any) -> None:
        return None


def attached(state: Path, identities: dict[str, str], config: dict[str, Any] | None = None) -> Any:
    guard = make_guard("server_allowlist", ["request"], config)
    asyncio.run(guard.attach(GatewayServices(state, NoCatalog(), identities)))
    return guard


def test_pins_on_first_sight_and_refuses_a_changed_identity(tmp_path: Path) -> None:
    order = ["github", "time"]
    first = attached(tmp_path, {"github": "digest-a", "time": "digest-t"})
    assert isinstance(run_hook(first, "request", {}, upstream="github", order=order), Allow)
    again = attached(tmp_path, {"github": "digest-a", "time": "digest-t"})
    assert isinstance(run_hook(again, "request", {}, upstream="github", order=order), Allow)
    moved = attached(tmp_path, {"github": "digest-b", "time": "digest-t"})
    denial = run_hook(moved, "request", {}, upstream="github", order=order)
    assert isinstance(denial, Deny) and denial.code == "upstream_identity_changed"
    assert isinstance(run_hook(moved, "request", {}, upstream="time", order=order), Allow)
    accepted = attached(tmp_path, {"github": "digest-b"}, {"pins": {"github": "digest-b"}})
    assert isinstance(run_hook(accepted, "request", {}, upstream="github", order=order), Allow)


def test_not_allowed_and_typosquat(tmp_path: Path) -> None:
    guard = attached(tmp_path, {"githab": "x", "other": "y"}, {"allowed": ["github", "time"]})
    squat = run_hook(guard, "request", {}, upstream="githab")
    assert isinstance(squat, Deny) and squat.code == "upstream_typosquat"
    assert squat.details == {"upstream": "githab", "imitates": "github"}
    other = run_hook(guard, "request", {}, upstream="other")
    assert isinstance(other, Deny) and other.code == "upstream_not_allowed"


def test_unknown_identity_fails_closed(tmp_path: Path) -> None:
    guard = attached(tmp_path, {})
    denial = run_hook(guard, "request", {}, upstream="time", order=["time"])
    assert isinstance(denial, Deny) and denial.code == "upstream_identity_unknown"


def test_typosquat_confusables() -> None:
    assert typosquat_of("gіthub", ["github"]) == "github"  # Cyrillic і
    assert typosquat_of("filesystem", ["github"]) is None
