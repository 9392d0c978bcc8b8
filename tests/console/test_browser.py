"""End to end in a real headless Chromium: an upstream's contract drifts, a real MCP client is held
(-32010), the operator signs in to `mcpward console`, sees the hold and accepts it with a reason,
and the client's next call passes. Screenshots are kept in results/console/ (printed).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.reviews import read_reviews
from mcpward.evidence.settings import EvidencePaths
from mcpward.store.ledger_sqlite import read_snapshot
from tests.contracts.test_e2e_gateway import fixture_upstream, rug_pull, set_scenario
from tests.support.gateway import gateway_params, open_client, write_gateway_config

CHROMIUM = Path("/usr/bin/chromium")
ADMIN_TOKEN = "console-admin-" + "k" * 32
# a running gateway may not have signed its first checkpoint yet: `unsigned` is not a failure
VERIFY_FINE = re.compile(r"^verify: (ok|unsigned)$")
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "console-holds.png"
# each page, copied to docs/img with MCPWARD_UPDATE_DOCS_SCREENSHOT=1 (docs/console.md shows them)
SCREENSHOTS = (
    "console-holds.png",
    "console-accepted.png",
    "console-pins.png",
    "console-receipts.png",
    "console-guards.png",
    "console-ledger.png",
)

if not CHROMIUM.exists():
    reason = f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from playwright.async_api import async_playwright, expect  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_console(
    config: Path | None, tmp_path: Path, *, state_dir: Path | None = None
) -> Iterator[str]:
    """`mcpward console --config CONFIG` (or `--state-dir STATE_DIR`) as a real process; yields
    its URL."""
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN_TOKEN + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    port = _free_port()
    where = ["--config", str(config)] if config is not None else ["--state-dir", str(state_dir)]
    argv = [sys.executable, "-m", "mcpward.cli.main", "console", *where]
    argv += ["--token-file", str(token_file), "--listen", f"127.0.0.1:{port}"]
    log = (tmp_path / "console.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            if proc.poll() is not None:
                raise RuntimeError((tmp_path / "console.log").read_text())
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                subprocess.run(["sleep", "0.05"], check=False)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


async def sign_in(page: Any, url: str, operator: str) -> None:
    await page.goto(f"{url}/holds")
    await expect(page).to_have_url(f"{url}/login")
    await page.fill("#operator-name", operator)
    await page.fill("#token", ADMIN_TOKEN)
    await page.click("#sign-in")
    await expect(page.locator("#operator")).to_have_text(operator)


@pytest.fixture
def console_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The gateway config and the URL of `mcpward console` serving its state (a real process)."""
    control = tmp_path / "control.json"
    set_scenario(control, "unchanged")
    config = write_gateway_config(
        tmp_path,
        [fixture_upstream("reports", control, tmp_path / "calls.log")],
        guards=[rug_pull()],
    )
    with serve_console(config, tmp_path) as url:
        yield config, url


async def test_a_hold_is_accepted_in_the_browser_and_the_next_call_passes(
    console_server: tuple[Path, str], artifacts: Path, tmp_path: Path
) -> None:
    config, url = console_server
    control = tmp_path / "control.json"
    async with open_client(gateway_params(config), mode="legacy") as client:
        await client.list_tools()
        await client.call_tool("make_report", {"title": "t"})
        set_scenario(control, "added_required")
        await client.list_tools()
        with pytest.raises(MCPError) as held:
            await client.call_tool("make_report", {"title": "t", "owner": "o"})
        assert held.value.error.code == -32010

        csp_errors: list[str] = []
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                page.on(
                    "console",
                    lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None,
                )
                await sign_in(page, url, "dana")
                hold = page.locator('section.hold[data-item="make_report"]')
                await expect(hold).to_be_visible()
                await expect(hold.locator("table.changes")).to_contain_text("added-required-param")
                await expect(hold.locator("pre.new")).to_contain_text("owner")
                # risk shown and the change highlighted inline (issue #25)
                await expect(hold).to_have_attribute("data-risk", "medium")
                await expect(hold.locator(".risk-badge")).to_have_text("medium risk")
                await expect(hold.locator("pre.delta .add").first).to_contain_text("owner")
                # Keep held is the primary action, and the decision shows on the card
                first_button = hold.locator("form.review button").first
                await expect(first_button).to_have_text("Keep held")
                await hold.locator("input[name=reason]").fill("asking the vendor first")
                await hold.locator("button.keep").click()
                await expect(page.locator("#result")).to_be_visible()
                hold = page.locator('section.hold[data-item="make_report"]')
                await expect(hold.locator(".kept")).to_contain_text("Kept held by dana at")
                await expect(hold.locator(".kept")).to_contain_text("asking the vendor first")
                await page.screenshot(path=str(artifacts / "console-holds.png"), full_page=True)
                width = await page.evaluate("document.documentElement.scrollWidth")
                assert width <= 1280, width  # nothing wider than the window
                await hold.locator("input[name=reason]").fill("owner field is expected (ticket 42)")
                await hold.locator("button.accept").click()
                await expect(page.locator("#result")).to_contain_text("Accepted")
                await expect(page.locator("#no-holds")).to_be_visible()
                await page.screenshot(path=str(artifacts / "console-accepted.png"), full_page=True)
                await page.goto(f"{url}/pins")
                await expect(page.locator("body")).to_contain_text("accept by dana")
                await page.screenshot(path=str(artifacts / "console-pins.png"), full_page=True)
                await page.goto(f"{url}/receipts?decision=hold&tool=make_report")
                await expect(page.locator("p.count")).to_contain_text("1 matching receipt(s)")
                width = await page.evaluate("document.documentElement.scrollWidth")
                assert width <= 1280, width  # the receipts table wraps within the window
                await page.screenshot(path=str(artifacts / "console-receipts.png"), full_page=True)
                await page.goto(f"{url}/guards")
                await expect(page.locator("#guard-chart svg").first).to_be_visible()
                await page.screenshot(path=str(artifacts / "console-guards.png"), full_page=True)
                await page.goto(f"{url}/ledger")
                await expect(page.locator("#verify-state")).to_have_text(VERIFY_FINE)
                ledger_text = await page.locator("table.facts").inner_text()
                assert "None" not in ledger_text and "{'" not in ledger_text  # readable values
                await page.screenshot(path=str(artifacts / "console-ledger.png"), full_page=True)
            finally:
                await browser.close()
        assert csp_errors == []

        result = await client.call_tool("make_report", {"title": "t", "owner": "o"})
        assert not result.is_error

    paths = EvidencePaths.resolve(tmp_path / "state")
    with read_snapshot(paths.ledger) as view:
        reviews = read_reviews(view.entries())
    assert [(r["action"], r["operator"], r["item"]) for r in reviews] == [
        ("keep_held", "dana", "make_report"),
        ("accept", "dana", "make_report"),
    ]
    assert verify_ledger(paths).ok
    if os.environ.get("MCPWARD_UPDATE_DOCS_SCREENSHOT"):
        for name in SCREENSHOTS:
            shutil.copyfile(artifacts / name, DOCS_SCREENSHOT.parent / name)
