"""`mcpward clients list|set-roles|set-ceiling|reset`: the client records kept in the store.

A stored field replaces the config file's value for that client on every replica of the store
(PostgreSQL: within a second, no restart); `reset` returns the client to its config entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mcpward.cli.options import ConfigOpt, JsonOpt, StateDirOpt, example
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.config.http_front import HttpFront
from mcpward.config.loader import ConfigError, load_config
from mcpward.identity.client_records import (
    ClientRecordsUnavailable,
    StoredRecord,
    check_client_id,
    check_roles,
    configured,
)
from mcpward.identity.consent import ConsentCeiling
from mcpward.store.clients import ClientRecords
from mcpward.store.factory import StoreContext, open_client_records

err = Console(stderr=True, highlight=False, soft_wrap=True)
ClientArg = Annotated[str, typer.Argument(help="The client id (a static token's or OAuth's).")]
Seeds = dict[str, tuple[tuple[str, ...], ConsentCeiling]]


def _fail(command: str, message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]mcpward clients {command}:[/red] {message}", markup=True)
    return typer.Exit(code)


def _context(command: str, state_dir: Path | None, config: Path | None) -> StoreContext:
    try:
        return cli_store_context(state_dir, config)
    except StoreChoiceError as exc:
        raise _fail(command, str(exc)) from None


@contextmanager
def _opened(command: str, context: StoreContext) -> Iterator[ClientRecords]:
    try:
        records = open_client_records(context, listen=False)
    except ClientRecordsUnavailable as exc:
        raise _fail(command, str(exc)) from None
    try:
        yield records
    except ClientRecordsUnavailable as exc:
        raise _fail(command, f"{exc} (`mcpward clients reset ID` drops a bad record)") from None
    finally:
        records.close()


def _seeds(config: Path | None) -> Seeds:
    """The clients the config file records (none without --config or an HTTP front)."""
    if config is None:
        return {}
    try:
        front = load_config(config).config.front
    except ConfigError:
        return {}  # already reported by the store context
    return configured(front.tokens, front.oauth) if isinstance(front, HttpFront) else {}


def _row(client_id: str, seed: Any, stored: StoredRecord | str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"client_id": client_id, "configured": seed is not None}
    if isinstance(stored, str):
        return {**row, "problem": stored, "refused": True}
    roles, ceiling = seed if seed is not None else ((), None)
    if stored is not None:
        roles = roles if stored.roles is None else stored.roles
        ceiling = ceiling if stored.ceiling is None else stored.ceiling
        row["stored"] = {
            "roles": None if stored.roles is None else list(stored.roles),
            "consent_ceiling": None if stored.ceiling is None else stored.ceiling.value,
            "updated_at": stored.updated_at,
        }
    row["roles"] = list(roles)
    row["consent_ceiling"] = ceiling.value if ceiling is not None else None
    return row


def _describe(row: dict[str, Any]) -> str:
    if row.get("refused"):
        return f"{row['client_id']}: REFUSED: {row['problem']}"
    source = "stored" if "stored" in row else "config"
    if "stored" in row and row["configured"]:
        source = "config, changed in the store"
    ceiling = row["consent_ceiling"] or "(not recorded: the OAuth default)"
    roles = ", ".join(row["roles"]) or "-"
    return f"{row['client_id']}: ceiling {ceiling}; roles {roles}  [{source}]"


def _changed(context: StoreContext, record: StoredRecord | None, client_id: str) -> str:
    where = " ".join(context.cli_args())
    if record is None:
        return f"{client_id}: no stored record left; the config entry stands ({where})"
    roles = "(config)" if record.roles is None else ", ".join(record.roles) or "none"
    ceiling = "(config)" if record.ceiling is None else record.ceiling.value
    return f"{client_id}: ceiling {ceiling}; roles {roles} ({where})"


def register(app: typer.Typer) -> None:
    clients_app = typer.Typer(
        help="Client records (roles, consent ceilings) kept in the store.", no_args_is_help=True
    )
    app.add_typer(clients_app, name="clients")

    @clients_app.command(
        "list", epilog=example("mcpward clients list --config mcpward.yaml --json")
    )
    def list_(
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Every client the config or the store records, with its effective roles and ceiling."""
        seeds = _seeds(config)
        with _opened("list", _context("list", state_dir, config)) as records:
            stored = records.snapshot()
        rows = [_row(c, seeds.get(c), stored.get(c)) for c in sorted({*seeds, *stored})]
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        for row in rows:
            typer.echo(_describe(row))
        if not rows:
            err.print("no client is recorded in the config or the store")

    @clients_app.command(
        "set-ceiling",
        epilog=example("mcpward clients set-ceiling ci-bot read_only -c mcpward.yaml"),
    )
    def set_ceiling(
        client_id: ClientArg,
        ceiling: Annotated[ConsentCeiling, typer.Argument(help="read_only|no_destructive|full")],
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Replace the client's consent ceiling on every replica of the store."""
        _set("set-ceiling", client_id, config, state_dir, ceiling=ceiling)

    @clients_app.command(
        "set-roles", epilog=example("mcpward clients set-roles ci-bot reader -c mcpward.yaml")
    )
    def set_roles(
        client_id: ClientArg,
        roles: Annotated[
            list[str] | None, typer.Argument(help="The roles; none given: no role at all.")
        ] = None,
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Replace the client's roles on every replica of the store."""
        try:
            checked = check_roles(roles or [])
        except ValueError as exc:
            raise _fail("set-roles", str(exc), 2) from None
        _set("set-roles", client_id, config, state_dir, roles=checked)

    @clients_app.command("reset", epilog=example("mcpward clients reset ci-bot -c mcpward.yaml"))
    def reset(
        client_id: ClientArg, config: ConfigOpt = None, state_dir: StateDirOpt = None
    ) -> None:
        """Drop the client's stored record: its config entry stands again."""
        with _opened("reset", _context("reset", state_dir, config)) as records:
            dropped = records.reset(client_id)
        state = "stored record dropped" if dropped else "had no stored record"
        err.print(f"{client_id}: {state}; the config entry stands")


def _set(
    command: str,
    client_id: str,
    config: Path | None,
    state_dir: Path | None,
    **change: Any,
) -> None:
    try:
        check_client_id(client_id)
    except ValueError as exc:
        raise _fail(command, str(exc), 2) from None
    context = _context(command, state_dir, config)
    if config is not None and client_id not in _seeds(config):
        err.print(f"note: {client_id} is not in the config file (an OAuth client id?)")
    with _opened(command, context) as records:
        record = records.change(client_id, **change)
    err.print(_changed(context, record, client_id))
