"""The `mcpward` entry point: builds the typer app from the command modules.

Each command module exposes `register(app)`. Only the module of the command being run is
imported, so `mcpward run` starts fast (an MCP host waits for it); `--help` imports them all.
"""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace
from typing import Any

import typer

# top-level command name -> the module that registers it
COMMANDS = {
    "config": "mcpward.cli.config_cmd",
    "run": "mcpward.cli.run",
    "demo": "mcpward.cli.demo",
    "guard": "mcpward.cli.guard",
    "ledger": "mcpward.cli.ledger",
    "stats": "mcpward.cli.ledger",
    "schema": "mcpward.cli.ledger",
    "pins": "mcpward.cli.pins",
    "holds": "mcpward.cli.pins",
    "diff": "mcpward.cli.pins",
    "snapshot": "mcpward.cli.pins",
    "scan": "mcpward.cli.scan",
    "screen": "mcpward.cli.screen",
    "verdicts": "mcpward.cli.verdicts",
    "validate": "mcpward.cli.validate",
    "redact": "mcpward.cli.scan",
    "eval": "mcpward.cli.scan",
    "token": "mcpward.cli.token_cmd",
    "clients": "mcpward.cli.clients_cmd",
    "wire": "mcpward.cli.wire",
    "unwire": "mcpward.cli.wire",
    "doctor": "mcpward.cli.doctor",
    "console": "mcpward.cli.console",
    "store": "mcpward.cli.store",
}
COMMAND_MODULES = sorted(set(COMMANDS.values()))
# `mcpward --help` groups the commands by what a person is doing
PANELS = {
    "Run": ("run", "demo", "console"),
    "Review": ("holds", "pins", "diff", "snapshot", "validate", "screen", "scan", "verdicts"),
    "Evidence": ("ledger", "stats", "schema", "redact", "eval"),
    "Setup": ("config", "wire", "unwire", "doctor", "token", "clients", "store", "guard"),
}
PANEL_OF = {name: panel for panel, names in PANELS.items() for name in names}


def build_app(argv: list[str]) -> typer.Typer:
    app = typer.Typer(
        name="mcpward",
        help="mcpward: a security gateway for the Model Context Protocol.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """mcpward: a security gateway for the Model Context Protocol."""

    wanted = COMMANDS.get(argv[0]) if argv else None
    for module in [wanted] if wanted else COMMAND_MODULES:
        importlib.import_module(module).register(app)
    order = list(PANELS)
    for infos in (app.registered_commands, app.registered_groups):
        for info in infos:
            name = info.name or (info.callback.__name__ if info.callback else "")
            info.rich_help_panel = info.rich_help_panel or PANEL_OF.get(name)
        infos.sort(
            key=lambda i: order.index(i.rich_help_panel) if i.rich_help_panel in order else 9
        )
    return app


def plain_flags(command: Any) -> Any:
    """Flags show no `<bool>` placeholder in help (`--dry-run`, never `--dry-run true`), nor
    does `--help` (made on first use, then cached: made here with click's default name).
    Duck-typed: typer carries its own copy of click."""
    help_option = command.get_help_option(SimpleNamespace(help_option_names=["--help"]))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "is_flag", False):
            param.metavar = " "
    for sub in getattr(command, "commands", {}).values():
        plain_flags(sub)
    return command


def __getattr__(name: str) -> typer.Typer:
    """`from mcpward.cli.main import app`: the full app with every command (tests, docs)."""
    if name == "app":
        return build_app([])
    raise AttributeError(name)


def main() -> None:
    plain_flags(typer.main.get_command(build_app(sys.argv[1:])))()


if __name__ == "__main__":
    main()
