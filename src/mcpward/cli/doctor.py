"""`mcpward doctor`: checks the installation and says what to fix (exit 1 if anything must be)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcpward.store.paths import state_dir_path
from mcpward.wiring.checkup import Level, run_checks

MARKS = {Level.OK: "ok  ", Level.NOTE: "note", Level.FIX: "FIX "}


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(
        config: Annotated[
            Path | None,
            typer.Option("--config", "-c", help="Gateway config whose state_dir to check."),
        ] = None,
        state_dir: Annotated[
            Path | None, typer.Option("--state-dir", help="The state directory to check.")
        ] = None,
    ) -> None:
        """Check the state directory, keys, stores, wired clients and Node; print what to fix."""
        if config is not None and state_dir is None:
            from mcpward.config import ConfigError, load_config

            try:
                state_dir = load_config(config).config.state_dir
            except ConfigError as exc:
                typer.echo(str(exc), err=True)
                raise typer.Exit(2) from None
        findings = run_checks(state_dir_path(state_dir))
        for finding in findings:
            typer.echo(f"{MARKS[finding.level]}  {finding.subject}: {finding.message}")
        to_fix = [f for f in findings if f.level == Level.FIX]
        if to_fix:
            typer.echo("\nTo fix:")
            for finding in to_fix:
                typer.echo(f"  - {finding.subject}: {finding.fix or finding.message}")
            raise typer.Exit(1)
        typer.echo("\nNothing needs fixing.")
