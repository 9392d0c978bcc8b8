"""`mcpward verdicts export|import`: screen verdicts shared between operators, signed."""

from __future__ import annotations

import typer

from mcpward.cli.screen import register_verdicts


def register(app: typer.Typer) -> None:
    register_verdicts(app)
