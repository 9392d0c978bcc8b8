"""Tier 3 end to end in a real headless Chromium: a running gateway holds a tool whose output
schema drifted (the HOLD names `mcpward validate`), the operator presses Validate in the console,
the tool is observed in a no-egress sandbox and CLEARED, the running gateway releases it, and the
client's next call passes; the verdict, its evidence and who asked are in the ledger, and the pin
is untouched."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mcp.shared.exceptions import MCPError

from mcpward.contracts.model import ItemKind
from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.validations import read_validations
from mcpward.store.ledger_sqlite import read_snapshot
from mcpward.store.pins_sqlite import SqlitePinStore
from tests.console.test_browser import CHROMIUM, serve_console, sign_in
from tests.contracts.test_e2e_gateway import rug_pull
from tests.fixtures.validation_server import tool_for
from tests.support.gateway import gateway_params, open_client, write_gateway_config
from tests.validation.held import UPSTREAM, fixture_upstream, require_isolator

require_isolator()

from playwright.async_api import async_playwright, expect  # noqa: E402


def _version(control: Path, version: int) -> None:
    control.with_suffix(".tmp").write_text(json.dumps({"version": version}), encoding="utf-8")
    control.with_suffix(".tmp").replace(control)


async def test_validate_in_the_browser_clears_the_hold_of_the_running_gateway(
    tmp_path: Path, artifacts: Path
) -> None:
    control = tmp_path / "control.json"
    _version(control, 1)
    upstream = fixture_upstream("honest", "--control", str(control))
    config = write_gateway_config(tmp_path, [upstream], guards=[rug_pull()])
    async with open_client(gateway_params(config), mode="legacy") as client:
        await client.list_tools()
        assert not (await client.call_tool("measure", {"unit": "m"})).is_error
        _version(control, 2)  # a silent drift: seen within revalidate_ttl_s
        for _ in range(100):
            try:
                await client.call_tool("measure", {"unit": "m"})
            except MCPError as held:
                assert held.error.code == -32010
                assert f"mcpward validate {UPSTREAM} measure --config" in held.error.message
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the drift was never held")

        with serve_console(config, tmp_path) as url:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
                try:
                    page = await browser.new_page(viewport={"width": 1280, "height": 900})
                    await sign_in(page, url, "erin")
                    hold = page.locator('section.hold[data-item="measure"]')
                    await expect(hold.locator("table.changes")).to_contain_text(
                        "output-schema-changed"
                    )
                    await hold.locator("button.validate").click()
                    await expect(page.locator("#result")).to_contain_text(
                        "Validation: CLEARED", timeout=120_000
                    )
                    verdict = page.locator('section.hold[data-item="measure"] div.validation')
                    await expect(verdict).to_have_attribute("data-verdict", "CLEARED")
                    await expect(verdict).to_contain_text("released for the running gateway only")
                    await expect(verdict.locator("p.cannot-see").first).to_contain_text(
                        "the real environment"
                    )
                    await page.screenshot(
                        path=str(artifacts / "console-validated.png"), full_page=True
                    )
                finally:
                    await browser.close()

        await client.list_tools()
        result = await client.call_tool("measure", {"unit": "cm"})
        assert not result.is_error and result.structured_content == {"count": 1, "unit": "cm"}

    paths = EvidencePaths.resolve(tmp_path / "state")
    with read_snapshot(paths.ledger) as view:
        entries = read_validations(view.entries())
    assert [(e["verdict"], e["requested_by"], e["item"]) for e in entries] == [
        ("CLEARED", "erin", "measure")
    ]
    assert entries[0]["provenance"]["tier_reached"] == 3
    assert verify_ledger(paths).ok
    store = SqlitePinStore(tmp_path / "state")
    try:
        assert store.load(UPSTREAM).pins[(ItemKind.TOOL, "measure")].contract == tool_for(1)
    finally:
        store.close()
