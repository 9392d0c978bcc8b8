"""The `mcpward` entry point: builds the typer app from the command modules.

Each command module exposes `register(app)`; add new ones to COMMAND_MODULES.
"""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES = [
    "mcpward.cli.config_cmd",
    "mcpward.cli.guard",
    "mcpward.cli.ledger",
    "mcpward.cli.run",
    "mcpward.cli.pins",
    "mcpward.cli.demo",
    "mcpward.cli.scan",
    "mcpward.cli.token_cmd",
]

app = typer.Typer(
    name="mcpward",
    help="mcpward: a security gateway for the Model Context Protocol.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
