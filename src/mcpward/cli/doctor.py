"""`mcpward doctor`: checks the installation and says what to fix (exit 1 if anything must be)."""

from __future__ import annotations

from pathlib import Path

import typer

from mcpward.cli.options import ConfigOpt, StateDirOpt, example
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.store.factory import StoreContext
from mcpward.store.paths import state_dir_path
from mcpward.wiring.checkup import Finding, Level, run_checks

MARKS = {Level.OK: "ok  ", Level.NOTE: "note", Level.WARN: "WARN", Level.FIX: "FIX "}


def _store(state_dir: Path | None, config: Path) -> StoreContext:
    """The store, state dir and keys a config names (nothing created); exit 2 if unreadable."""
    try:
        return cli_store_context(state_dir, config, create=False)
    except StoreChoiceError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None


def _protections(config: Path) -> list[Finding]:
    """Which protections the config has on; a warning for each one that is off."""
    from mcpward.config.loader import ConfigError, load_config
    from mcpward.config.protections import protection_states

    try:
        loaded = load_config(config)
    except ConfigError as exc:
        return [Finding(Level.FIX, "config", str(exc), f"mcpward config check {config}")]
    states = protection_states(loaded)
    on = [s.kind for s in states if s.state == "on"]
    findings = [Finding(Level.OK, "protections", f"on: {', '.join(on)}")] if on else []
    findings += [
        Finding(Level.WARN, "protections", s.warning, f"see `mcpward config check {config}`")
        for s in states
        if s.warning
    ]
    return findings


def _report(findings: list[Finding]) -> None:
    for finding in findings:
        typer.echo(f"{MARKS[finding.level]}  {finding.subject}: {finding.message}")
        if finding.level == Level.WARN and finding.fix:
            typer.echo(f"      -> {finding.fix}")
    to_fix = [f for f in findings if f.level == Level.FIX]
    if to_fix:
        typer.echo("\nTo fix:")
        for finding in to_fix:
            typer.echo(f"  - {finding.subject}: {finding.fix or finding.message}")
        raise typer.Exit(1)
    warned = sum(f.level == Level.WARN for f in findings)
    typer.echo(
        f"\nNothing needs fixing; {warned} warning(s) above need a person."
        if warned
        else "\nNothing needs fixing."
    )


def register(app: typer.Typer) -> None:
    @app.command("doctor", epilog=example("mcpward doctor --config mcpward.yaml"))
    def doctor(
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Check the state directory, keys, the store (SQLite or PostgreSQL), wired clients and
        Node; print what to fix."""
        if config is None:
            _report(run_checks(state_dir_path(state_dir)))
            return
        store = _store(state_dir, config)
        found = [*_protections(config), *run_checks(store.state_dir, store)]
        _report(sorted(found, key=lambda f: f.subject != "holds"))  # open holds lead
