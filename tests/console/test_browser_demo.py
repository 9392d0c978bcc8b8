"""`mcpward demo --keep`, then `mcpward console --state-dir` on what it kept, in headless Chromium:
the hold the demo left open is the one card, marked high risk, with the rewritten description
(issue #25: the console was empty after the demo accepted its own hold)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.async_api import async_playwright, expect

# test_browser skips (or, under CI, fails) at import when Chromium is missing: so does this
from tests.console.test_browser import CHROMIUM, DOCS_SCREENSHOT, serve_console, sign_in
from tests.demo.test_walkthrough import kept_workdir, run_demo

SCREENSHOT = "console-demo-keep.png"  # docs/console.md shows it


async def test_the_console_shows_the_hold_demo_keep_left_open(
    tmp_path: Path, artifacts: Path
) -> None:
    done = run_demo(tmp_path, "--keep")
    assert done.returncode == 0, done.stdout + done.stderr
    state = kept_workdir(tmp_path) / "state"
    with serve_console(None, tmp_path, state_dir=state) as url:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                await sign_in(page, url, "sam")
                cards = page.locator("section.hold")
                await expect(cards).to_have_count(1)
                hold = page.locator('section.hold[data-item="read_config"]')
                await expect(hold).to_have_attribute("data-risk", "high")
                await expect(hold.locator("table.changes")).to_contain_text(
                    "injection-marker-added"
                )
                await expect(hold.locator("pre.delta .add").first).to_contain_text(
                    "aws/credentials"
                )
                await page.screenshot(path=str(artifacts / SCREENSHOT), full_page=True)
            finally:
                await browser.close()
    if os.environ.get("MCPWARD_UPDATE_DOCS_SCREENSHOT"):
        shutil.copyfile(artifacts / "console-demo-keep.png", DOCS_SCREENSHOT.parent / SCREENSHOT)
