"""`mcpward demo`: run the bundled demo server behind the gateway and narrate each step."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mcpward.cli.options import example


class DemoEra(StrEnum):
    AUTO = "auto"
    LEGACY = "legacy"
    V2026 = "2026-07-28"


def register(app: typer.Typer) -> None:
    @app.command("demo", epilog=example("mcpward demo --keep-in ~/mcpward-demo"))
    def demo(
        mode: Annotated[
            DemoEra, typer.Option("--mode", help="Protocol era the demo client speaks.")
        ] = DemoEra.AUTO,
        keep: Annotated[
            bool,
            typer.Option(
                "--keep",
                help="Keep the demo's config, state and gateway log, with one hold left open.",
            ),
        ] = False,
        directory: Annotated[
            Path | None,
            typer.Option(
                "--keep-in", help="Keep them in this new (or empty) directory (implies --keep)."
            ),
        ] = None,
    ) -> None:
        """Start the demo MCP server behind mcpward; show a listing, a passing call, a denied call,
        a redacted secret and a held rug pull as a real MCP client sees them.

        With --keep or --keep-in, a second rug pull is left held for you to review (`mcpward holds`,
        `mcpward console`)."""
        # Imported here: the walkthrough loads the MCP SDK client, which `mcpward run` never needs.
        from mcpward.demo.walkthrough import run_walkthrough

        if directory is not None:
            directory = directory.expanduser().resolve()  # the config names absolute paths
            if directory.exists() and any(directory.iterdir()):
                typer.echo(
                    f"mcpward demo: {directory} is not empty; give a new directory (a demo "
                    "starts from nothing: no pins, no ledger)",
                    err=True,
                )
                raise typer.Exit(2)
        status = asyncio.run(
            run_walkthrough(Console(), mode=mode.value, keep=keep, workdir=directory)
        )
        raise typer.Exit(status)
