"""`mcpward demo`: run the bundled demo server behind the gateway and narrate each step."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console


class DemoEra(StrEnum):
    AUTO = "auto"
    LEGACY = "legacy"
    V2026 = "2026-07-28"


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        mode: Annotated[
            DemoEra, typer.Option("--mode", help="Protocol era the demo client speaks.")
        ] = DemoEra.AUTO,
        keep: Annotated[
            bool,
            typer.Option(
                "--keep", help="Keep the demo's config, state and gateway log afterwards."
            ),
        ] = False,
    ) -> None:
        """Start the demo MCP server behind mcpward; show a listing, a passing call, a denied call
        and a redacted secret as a real MCP client sees them."""
        # Imported here: the walkthrough loads the MCP SDK client, which `mcpward run` never needs.
        from mcpward.demo.walkthrough import run_walkthrough

        status = asyncio.run(run_walkthrough(Console(), mode=mode.value, keep=keep))
        raise typer.Exit(status)
