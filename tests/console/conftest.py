"""A console app over a prepared state directory, served in-process by Starlette's TestClient."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mcpward.console.app import ConsoleSettings, create_console_app
from mcpward.console.auth import AdminAuth
from tests.console.state import ADMIN_TOKEN, make_state


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    make_state(tmp_path)
    return tmp_path


@pytest.fixture
def client(state_dir: Path) -> Iterator[TestClient]:
    from mcpward.evidence.settings import EvidencePaths

    settings = ConsoleSettings(state_dir, EvidencePaths.resolve(state_dir), AdminAuth(ADMIN_TOKEN))
    with TestClient(create_console_app(settings), follow_redirects=False) as test_client:
        yield test_client


def login(client: TestClient, operator: str = "alice") -> str:
    """Sign in through the form; returns the CSRF token of the new session."""
    page = client.get("/login")
    nonce = page.text.split('name="nonce" value="', 1)[1].split('"', 1)[0]
    response = client.post(
        "/login", data={"nonce": nonce, "token": ADMIN_TOKEN, "operator": operator}
    )
    assert response.status_code == 303, response.text
    holds = client.get("/holds")
    return holds.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


@pytest.fixture
def artifacts() -> Path:
    """Screenshots kept after the run: results/console/ (gitignored) or $MCPWARD_ARTIFACTS."""
    root = Path(os.environ.get("MCPWARD_ARTIFACTS") or Path(__file__).parents[2] / "results")
    directory = root / "console"
    directory.mkdir(parents=True, exist_ok=True)
    print(f"\nconsole screenshots: {directory}")
    return directory
