"""`mcpward store migrate|status|copy`: the schema of a PostgreSQL store, its health, and moving a
single-box SQLite state into it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mcpward.cli.options import RequiredConfigOpt, example
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.store.factory import StoreContext, store_ready

err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", markup=True)
    return typer.Exit(code)


def _context(config: Path) -> StoreContext:
    try:
        return cli_store_context(None, config)
    except StoreChoiceError as exc:
        raise _fail(str(exc)) from None


def register(app: typer.Typer) -> None:
    store_app = typer.Typer(help="The state store: migrations, status, copy.", no_args_is_help=True)
    app.add_typer(store_app, name="store")

    @store_app.command("migrate", epilog=example("mcpward store migrate --config fleet.yaml"))
    def migrate_cmd(config: RequiredConfigOpt) -> None:
        """Apply the pending schema migrations of a PostgreSQL store (each in one transaction)."""
        from mcpward.store.postgres.migrations import code_version, migrate
        from mcpward.store.postgres.pool import PostgresUnavailable, acquire_pool, release_pool

        context = _context(config)
        if not context.postgres:
            err.print("the store is SQLite: it migrates itself; nothing to do")
            return
        try:
            pool = acquire_pool(context.settings)
        except PostgresUnavailable as exc:
            raise _fail(str(exc)) from None
        try:
            applied = migrate(pool)
        except PostgresUnavailable as exc:
            raise _fail(str(exc)) from None
        finally:
            release_pool(pool)
        for migration in applied:
            err.print(f"applied {migration.version:04d}_{migration.name}")
        err.print(f"{pool.where}: schema at version {code_version()}")

    @store_app.command("status", epilog=example("mcpward store status --config fleet.yaml"))
    def status_cmd(config: RequiredConfigOpt) -> None:
        """Whether the store answers and its schema matches this mcpward (exit 1 if not)."""
        context = _context(config)
        reason = store_ready(context)
        where = "postgres" if context.postgres else f"sqlite in {context.state_dir}"
        if reason is not None:
            raise _fail(f"{where}: not ready: {reason}")
        err.print(f"{where}: ready (keys in {context.keys_dir})")

    @store_app.command(
        "copy",
        epilog=example("mcpward store copy --from-config mcpward.yaml --to-config fleet.yaml"),
    )
    def copy_cmd(
        from_config: Annotated[
            Path, typer.Option("--from-config", help="The single-box (SQLite) config.")
        ],
        to_config: Annotated[
            Path, typer.Option("--to-config", help="The fleet (PostgreSQL) config.")
        ],
    ) -> None:
        """Copy pins, holds and the ledger (with its checkpoints) into an empty PostgreSQL store,
        then verify the copy. The source is only read."""
        from mcpward.cli.store_copy import CopyError, copy_store

        source, target = _context(from_config), _context(to_config)
        try:
            report = copy_store(source, target)
        except CopyError as exc:
            raise _fail(str(exc)) from None
        for line in report:
            err.print(line)
