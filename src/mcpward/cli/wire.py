"""`mcpward wire CLIENT` and `mcpward unwire CLIENT`: put a client's stdio servers behind mcpward
and take them out again, editing the client's config file in place (diff shown, backup kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcpward.cli.options import ClientFileOpt, DryRunOpt, ForceOpt, StateDirOpt, example
from mcpward.store.paths import resolve_state_dir
from mcpward.wiring.backup import WiringStateError, WiringStore
from mcpward.wiring.clients import CLIENTS, ClientFormat, default_config_path
from mcpward.wiring.document import ConfigRefused
from mcpward.wiring.entries import EntryKind, entry_label
from mcpward.wiring.launcher import find_launcher
from mcpward.wiring.masking import printable, safe_url
from mcpward.wiring.operations import (
    WirePlan,
    apply_unwire,
    apply_wire,
    plan_unwire,
    plan_wire,
)

REMOTE_NOTE = (
    "Remote servers are not started by the client, so there is no command to wrap. To put one "
    "behind mcpward, declare it as an `http` upstream (id + url) in a gateway config and point "
    "the client at `mcpward run --config FILE`, or serve it to clients through the HTTP front "
    "(docs/http-front.md, docs/wiring.md)."
)

ClientArg = Annotated[
    str,
    typer.Argument(metavar="CLIENT", help=f"The client: {', '.join(CLIENTS)}.", show_default=False),
]


def _client(name: str) -> ClientFormat:
    client = CLIENTS.get(name)
    if client is None:
        typer.echo(f"unknown client {name!r}; one of: {', '.join(CLIENTS)}", err=True)
        raise typer.Exit(2)
    return client


def _fail(command: str, message: str) -> typer.Exit:
    typer.echo(f"mcpward {command}: {message}", err=True)
    return typer.Exit(2)


def _report(plan: WirePlan) -> None:
    for record in plan.wired:
        label = printable(entry_label(record.where, record.name))
        typer.echo(f"  wire     {label} -> upstream id {record.upstream_id}")
    for entry in plan.entries(EntryKind.WIRED):
        typer.echo(f"  already  {printable(entry.label)} (runs mcpward run)")
    for entry in plan.entries(EntryKind.ENV_FILE):
        typer.echo(
            f"  skipped  {printable(entry.label)}: it loads an envFile whose variable names "
            "mcpward cannot know ahead; wire it by hand with `--pass-env NAME` for each one",
        )
    remote = plan.entries(EntryKind.REMOTE)
    for entry in remote:
        typer.echo(f"  remote   {printable(entry.label)} -> {safe_url(entry.url)} (left alone)")
    if remote:
        typer.echo(REMOTE_NOTE)


def _wire(client: ClientFormat, path: Path, store: WiringStore, dry_run: bool) -> None:
    try:
        plan = plan_wire(client, path, find_launcher(), store)
    except (ConfigRefused, WiringStateError) as exc:
        raise _fail("wire", str(exc)) from None
    typer.echo(f"{client.title}: {path}\n  ({client.note})")
    _report(plan)
    if not plan.changed:
        typer.echo("Nothing to wire: the file is unchanged.")
        return
    typer.echo(plan.diff, nl=False)
    if dry_run:
        typer.echo("Dry run: nothing written.")
        return
    try:
        backup = apply_wire(plan, store)
    except (ConfigRefused, WiringStateError) as exc:
        raise _fail("wire", str(exc)) from None
    except OSError as exc:
        raise _fail("wire", f"{path}: cannot be written ({exc.strerror})") from None
    typer.echo(
        f"Wired {len(plan.wired)} server(s); backup of the original: {backup}. "
        f"Restart {client.title} to use them; `mcpward unwire {client.name}` undoes this.",
    )


def _unwire(
    client: ClientFormat, path: Path, store: WiringStore, dry_run: bool, force: bool
) -> None:
    try:
        plan = plan_unwire(client, path, store, force=force)
    except (ConfigRefused, WiringStateError) as exc:
        raise _fail("unwire", str(exc)) from None
    typer.echo(f"{client.title}: {path}")
    for name in plan.gone:
        typer.echo(f"  gone     {printable(name)} (removed from the file since it was wired)")
    if plan.forced:
        typer.echo("  --force: restoring the backup taken before wiring")
    else:
        typer.echo(plan.diff, nl=False)
    if dry_run:
        typer.echo("Dry run: nothing written.")
        return
    try:
        apply_unwire(plan, store)
    except ConfigRefused as exc:
        raise _fail("unwire", str(exc)) from None
    except OSError as exc:
        raise _fail("unwire", f"{path}: cannot be written ({exc.strerror})") from None
    typer.echo(f"Unwired. Restart {client.title}.")


def register(app: typer.Typer) -> None:
    @app.command("wire", epilog=example("mcpward wire claude-desktop --dry-run"))
    def wire(
        client_name: ClientArg,
        config_file: ClientFileOpt = None,
        dry_run: DryRunOpt = False,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Put every stdio server of CLIENT behind `mcpward run` (diff shown, backup kept)."""
        client = _client(client_name)
        path = config_file or default_config_path(client.name)
        store = WiringStore(resolve_state_dir(state_dir))
        with store.locked():
            _wire(client, path, store, dry_run)

    @app.command("unwire", epilog=example("mcpward unwire claude-desktop --dry-run"))
    def unwire(
        client_name: ClientArg,
        config_file: ClientFileOpt = None,
        dry_run: DryRunOpt = False,
        force: ForceOpt = False,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Take CLIENT's servers out from behind mcpward: the file as it was, byte for byte.

        If the wired entries were edited since, --force restores the backup anyway, discarding
        every change made to the file since it was wired."""
        client = _client(client_name)
        path = config_file or default_config_path(client.name)
        store = WiringStore(resolve_state_dir(state_dir))
        with store.locked():
            _unwire(client, path, store, dry_run, force)
